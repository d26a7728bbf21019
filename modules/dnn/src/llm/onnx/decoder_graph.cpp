// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "decoder_graph.hpp"

#ifdef HAVE_PROTOBUF

#include "onnx_model_file.hpp"

#include <algorithm>
#include <functional>
#include <queue>

namespace cv {
namespace dnn {
namespace llm {

using opencv_onnx::NodeProto;

namespace {

bool isOp(const NodeProto& n, const char* type)
{
    return n.op_type() == type;
}

std::vector<bool> markNeeded(const opencv_onnx::GraphProto& g, const std::string& logits, DecoderGraph& d)
{
    std::vector<bool> needed(g.node_size(), false);
    std::vector<std::string> pending{logits};
    std::set<std::string> seen{logits};
    while (!pending.empty())
    {
        const std::string name = pending.back();
        pending.pop_back();
        d.neededValues.insert(name);
        auto it = d.producer.find(name);
        if (it == d.producer.end() || needed[it->second])
            continue;
        needed[it->second] = true;
        const NodeProto& n = g.node(it->second);
        for (int i : computedInputs(n))
            if (i < n.input_size() && !n.input(i).empty() && seen.insert(n.input(i)).second)
                pending.push_back(n.input(i));
    }
    return needed;
}

std::vector<int> executionOrder(const OnnxModelFile& file, const std::vector<bool>& needed, const DecoderGraph& d)
{
    const opencv_onnx::GraphProto& g = file.graph();
    std::vector<int> waiting(g.node_size(), 0);
    std::vector<std::vector<int>> consumers(g.node_size());
    for (int i = 0; i < g.node_size(); i++)
    {
        if (!needed[i])
            continue;
        const NodeProto& n = g.node(i);
        for (int k : computedInputs(n))
        {
            if (k >= n.input_size() || n.input(k).empty())
                continue;
            auto it = d.producer.find(n.input(k));
            if (it != d.producer.end() && needed[it->second])
            {
                waiting[i]++;
                consumers[it->second].push_back(i);
            }
        }
    }
    std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
    for (int i = 0; i < g.node_size(); i++)
        if (needed[i] && waiting[i] == 0)
            ready.push(i);
    std::vector<int> order;
    while (!ready.empty())
    {
        const int i = ready.top();
        ready.pop();
        order.push_back(i);
        for (int c : consumers[i])
            if (--waiting[c] == 0)
                ready.push(c);
    }
    if (order.size() != (size_t)std::count(needed.begin(), needed.end(), true))
        file.fail("the graph has a cycle");
    return order;
}

const NodeProto* findLogitsProducer(const opencv_onnx::GraphProto& g, const DecoderGraph& d, std::string name)
{
    for (int hops = 0; hops < g.node_size(); hops++)
    {
        auto it = d.producer.find(name);
        if (it == d.producer.end())
            return nullptr;
        const NodeProto* p = &g.node(it->second);
        if (isOp(*p, "MatMul") || isOp(*p, "MatMulNBits"))
            return p;
        if (!(isOp(*p, "Cast") || isOp(*p, "Identity")) || p->input_size() < 1)
            return nullptr;
        name = p->input(0);
    }
    return nullptr;
}

} // namespace

bool isAttentionOp(const NodeProto& n)
{
    return isOp(n, "GroupQueryAttention") || isOp(n, "MultiHeadAttention") || isOp(n, "Attention");
}

int pastKeyInput(const NodeProto& n)
{
    if (isOp(n, "GroupQueryAttention"))
        return 3;
    if (isOp(n, "MultiHeadAttention"))
        return 6;
    if (isOp(n, "Attention"))
        return 4;
    return -1;
}

std::vector<int> computedInputs(const NodeProto& n)
{
    if (isOp(n, "GroupQueryAttention"))
    {
        std::vector<int> in{0, 1, 2};
        if (onnxIntAttribute(n, "do_rotary", 0) != 0)
            in.insert(in.end(), {7, 8});
        return in;
    }
    if (isOp(n, "MultiHeadAttention") || isOp(n, "Attention"))
        return {0, 1, 2};
    if (isOp(n, "RotaryEmbedding"))
        return n.domain() == "com.microsoft" ? std::vector<int>{0, 2, 3} : std::vector<int>{0, 1, 2};
    std::vector<int> all(n.input_size());
    for (int i = 0; i < n.input_size(); i++)
        all[i] = i;
    return all;
}

DecoderGraph analyzeDecoderGraph(const OnnxModelFile& file, const std::string& logits)
{
    const opencv_onnx::GraphProto& g = file.graph();
    DecoderGraph d;
    for (int i = 0; i < g.node_size(); i++)
        for (const std::string& out : g.node(i).output())
            if (!out.empty() && !d.producer.emplace(out, i).second)
                file.fail("value '" + out + "' is produced by two nodes");
    const std::vector<bool> needed = markNeeded(g, logits, d);
    d.order = executionOrder(file, needed, d);
    d.logitsProducer = findLogitsProducer(g, d, logits);
    return d;
}

}}} // namespace cv::dnn::llm

#endif // HAVE_PROTOBUF
