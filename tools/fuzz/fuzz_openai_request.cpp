// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// libFuzzer target: arbitrary bytes as a request body of llm_server (server/openai_request.cpp)
// and as a model's reply read for tool calls (server/tool_calls.cpp). An ApiError (answered as
// HTTP 400) is the expected answer to a bad body; anything else (a crash, a sanitizer report, a
// leak, a timeout, another exception) is a bug.
//
// Input layout: byte 0 chooses the reader (0 chat, 1 completions, 2 tokenize, 3 detokenize,
// 4 a reply with tool calls, in the Hermes form when bit 3 is clear, or with bit 6 set a
// POST /lora-adapters body); the rest is the body. LoRA adapters 0 and 1 are loaded.

#include "../../server/openai_request.hpp"
#include "../../server/tool_calls.hpp"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    using namespace llm_server;
    if (size < 1)
        return 0;
    const std::string body((const char*)data + 1, size - 1);
    RequestLimits limits;
    limits.hasProjector = (data[0] & 0x10) != 0;
    limits.vocabSize = 32000;
    limits.adapterIds = {0, 1};
    try
    {
        switch (data[0] % 5)
        {
        case 0:
        {
            const ParsedRequest p = parseChatRequest(body, limits);
            if (p.toolChoice == ToolChoice::Required || p.toolChoice == ToolChoice::Named)
                forcedCallSchema(p.toolsJson, p.namedTool, ToolCallFormat::Hermes);
            break;
        }
        case 1:
            parseCompletionRequest(body, limits);
            break;
        case 2:
            parseTokenizeRequest(body);
            break;
        case 3:
            parseDetokenizeRequest(body, limits.vocabSize);
            break;
        default:
        {
            if (data[0] & 0x40)
            {
                parseLoraList(body, limits);
                break;
            }
            const ToolCallFormat format = (data[0] & 0x08) ? ToolCallFormat::Llama3 : ToolCallFormat::Hermes;
            parseToolCalls(body, format, (data[0] & 0x20) != 0);
            break;
        }
        }
    }
    catch (const ApiError&)
    {
    }
    return 0;
}
