// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// dnn's generated ONNX protobuf classes (opencv_onnx::ModelProto, ...), included as dnn's own
// importer includes them.

#ifndef OPENCV_DNN_SRC_LLM_ONNX_ONNX_PROTO_HPP
#define OPENCV_DNN_SRC_LLM_ONNX_ONNX_PROTO_HPP

#ifdef HAVE_PROTOBUF
#if defined(__GNUC__) && __GNUC__ >= 5
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsuggest-override"
#endif
#include "opencv-onnx.pb.h"
#if defined(__GNUC__) && __GNUC__ >= 5
#pragma GCC diagnostic pop
#endif
#endif

#endif
