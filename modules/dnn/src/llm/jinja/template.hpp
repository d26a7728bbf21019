// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// A Jinja template of our own engine (no Python at run time), set up as Hugging Face
// transformers renders chat templates: trim_blocks and lstrip_blocks on, the loopcontrols
// extension, jinja2's ImmutableSandboxedEnvironment rules, tojson without ASCII escaping,
// raise_exception and strftime_now. Every syntax or runtime error is a cv::Exception that
// names the template's line and column; rendering untrusted templates is bounded (see
// RenderLimits).

#ifndef OPENCV_DNN_SRC_LLM_JINJA_TEMPLATE_HPP
#define OPENCV_DNN_SRC_LLM_JINJA_TEMPLATE_HPP

#include "ast.hpp"
#include "interpreter.hpp"

#include <opencv2/core.hpp>

#include <string>
#include <utility>
#include <vector>

namespace cv {
namespace dnn {
namespace llm {
namespace jinja {

//! Templates are at most this long (real chat templates are a few kB to tens of kB).
const size_t kMaxTemplateBytes = 4u << 20;

// Exported (though internal) so that the C++ tests can reach it through libopencv_dnn.
class CV_EXPORTS Template
{
public:
    //! Parses a template; cv::Exception (StsParseError) with the line and column on a syntax error.
    explicit Template(const std::string& source);
    ~Template();

    //! Renders with these variables; cv::Exception on a runtime error or a limit reached.
    std::string render(const std::vector<std::pair<std::string, Value> >& variables,
                       const RenderOptions& options = RenderOptions()) const;
    //! Renders with the members of a JSON object as variables.
    std::string renderJson(const std::string& variablesJson, const RenderOptions& options = RenderOptions()) const;

    //! The template as parsed: newlines normalized, one trailing newline dropped.
    const std::string& source() const { return source_; }

private:
    Template(const Template&) = delete;
    Template& operator=(const Template&) = delete;

    std::string source_;
    NodeList body_;
};

//! "line 3, column 14" of a byte offset in a text (columns count characters from 1).
std::string describeLocation(const std::string& text, size_t offset);

}}}} // namespace cv::dnn::llm::jinja

#endif
