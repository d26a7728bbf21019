// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The values a Jinja template computes with, and the Python semantics Jinja inherits from
// Python (jinja2 runs templates as Python): truthiness, ==, ordering, str() and repr().
//
// Kinds follow Python's types: None, bool, int (64 bits here), float, str (UTF-8; "markup" is
// jinja2's Markup, i.e. |safe), sequences (list, tuple, dict views, range), dict (insertion
// ordered), generators (what map / select / ... return: truthy, iterable once, no len()),
// objects (namespace, macro, loop, bound method, ...) and jinja2's Undefined. Lists, tuples and
// dicts are immutable once made (transformers renders in jinja2's ImmutableSandboxedEnvironment),
// so they are shared; only namespaces change, through {% set ns.attr = ... %}.

#ifndef OPENCV_DNN_SRC_LLM_JINJA_VALUE_HPP
#define OPENCV_DNN_SRC_LLM_JINJA_VALUE_HPP

#include "errors.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace cv {
namespace dnn {
namespace llm {
namespace jinja {

class Interpreter;
class Value;
struct CallArgs;

enum class ValueKind { Undefined, None, Bool, Int, Float, String, Sequence, Dict, Generator, Object };
//! What a sequence is in Python: it decides repr(), tojson and indexing. GroupTuple is the
//! (grouper, list) named tuple of groupby, a tuple with those two attributes.
enum class SequenceKind { List, Tuple, DictKeys, DictValues, DictItems, Range, GroupTuple };

//! Lists and dicts nest at most this deep (their recursive copies and destruction stay shallow).
const int kMaxValueDepth = 128;

struct HeapValue
{
    virtual ~HeapValue() {}
};

//! An object with attributes and maybe a call: namespace, macro, loop, bound method, ...
class Object : public HeapValue
{
public:
    //! Python's type name, for messages ("Namespace", "Macro", "builtin_function_or_method").
    virtual std::string typeName() const = 0;
    //! The attribute, or an Undefined value naming it.
    virtual Value getAttribute(const std::string& name) const;
    virtual bool isCallable() const { return false; }
    virtual Value call(Interpreter& interpreter, const CallArgs& args);
    virtual std::string repr(Budget& budget, int depth) const;
};

class Value
{
public:
    Value() : kind_(ValueKind::Undefined) {}  //!< undefined, unnamed

    static Value undefinedName(const std::string& name);
    //! `owner.name` or `owner[name]` that does not exist.
    static Value undefinedMember(const Value& owner, const Value& name);
    //! An undefined value whose use fails with `hint` (as jinja2's undefined(hint)).
    static Value undefinedWithHint(const std::string& hint, ErrorKind kind = ErrorKind::Undefined);
    static Value none();
    static Value boolean(bool b);
    static Value integer(int64_t i);
    static Value number(double d);
    static Value string(std::string text, bool markup = false);
    static Value sequence(std::vector<Value> items, SequenceKind kind = SequenceKind::List);
    static Value dict(std::vector<std::pair<Value, Value> > entries);
    static Value generator(std::vector<Value> items, const char* typeName = "generator");
    static Value object(std::shared_ptr<Object> object);

    ValueKind kind() const { return kind_; }
    bool isUndefined() const { return kind_ == ValueKind::Undefined; }
    bool isNone() const { return kind_ == ValueKind::None; }
    bool isBool() const { return kind_ == ValueKind::Bool; }
    bool isInt() const { return kind_ == ValueKind::Int; }
    bool isFloat() const { return kind_ == ValueKind::Float; }
    //! int, float or bool (Python's bool is an int).
    bool isNumber() const { return kind_ == ValueKind::Int || kind_ == ValueKind::Float || kind_ == ValueKind::Bool; }
    //! int or bool.
    bool isInteger() const { return kind_ == ValueKind::Int || kind_ == ValueKind::Bool; }
    bool isString() const { return kind_ == ValueKind::String; }
    bool isSequence() const { return kind_ == ValueKind::Sequence; }
    bool isList() const { return isSequence() && sequenceKind() == SequenceKind::List; }
    bool isTuple() const
    {
        return isSequence() && (sequenceKind() == SequenceKind::Tuple || sequenceKind() == SequenceKind::GroupTuple);
    }
    bool isDict() const { return kind_ == ValueKind::Dict; }
    bool isGenerator() const { return kind_ == ValueKind::Generator; }
    bool isObject() const { return kind_ == ValueKind::Object; }
    bool isMarkup() const { return kind_ == ValueKind::String && markup_; }

    bool asBool() const { return b_; }
    //! An int or bool as int64.
    int64_t asInt() const { return kind_ == ValueKind::Bool ? (int64_t)b_ : i_; }
    //! Any number as double.
    double asDouble() const;
    const std::string& str() const;
    SequenceKind sequenceKind() const;
    const std::vector<Value>& items() const;
    const std::vector<std::pair<Value, Value> >& entries() const;
    //! The value at `key` of a dict (Python equality of keys), or nullptr.
    const Value* findKey(const Value& key) const;
    const Value* findKey(const std::string& key) const;
    //! Nesting depth of lists and dicts (0 for scalars).
    int depth() const;
    Object* object() const;
    template <typename T> T* objectAs() const { return dynamic_cast<T*>(object()); }
    //! The items a generator has not yet given; marks them all taken.
    std::vector<Value> takeGenerator() const;
    //! Python's type name ("str", "dict", "NoneType", ...).
    std::string typeName() const;

    //! How an undefined value came to be, for the error its use raises.
    std::string undefinedMessage() const;
    ErrorKind undefinedErrorKind() const;
    //! Throws the error that using an undefined value raises.
    [[noreturn]] void failUndefined() const;

private:
    ValueKind kind_;
    bool markup_ = false;
    union
    {
        int64_t i_ = 0;
        double d_;
        bool b_;
    };
    std::shared_ptr<HeapValue> heap_;
};

//! Positional and keyword arguments of a call.
struct CallArgs
{
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value> > keywords;
    const Value* keyword(const std::string& name) const;
};

// Python semantics. Recursive operations charge their work to the budget and stop at
// kMaxRecursion levels (namespaces may refer to themselves).
const int kMaxRecursion = 256;

bool truthy(const Value& v);
bool equals(const Value& a, const Value& b, Budget& budget, int depth = 0);
//! <0, 0, >0 as Python orders the values; TypeError where Python has no order.
int compare(const Value& a, const Value& b, Budget& budget, int depth = 0);
//! Python's str(): what {{ value }} writes.
std::string toStr(const Value& v, Budget& budget, int depth = 0);
//! Python's repr().
std::string repr(const Value& v, Budget& budget, int depth = 0);
//! `item in container`.
bool contains(const Value& container, const Value& item, Budget& budget);
//! The items `for x in value` visits (keys of a dict, characters of a string); TypeError for
//! values that are not iterable. Undefined iterates as empty.
std::vector<Value> iterate(const Value& value, Budget& budget);
//! len(); TypeError for values without one.
int64_t length(const Value& value);
//! Python's repr of a str.
std::string reprString(const std::string& text);

}}}} // namespace cv::dnn::llm::jinja

#endif
