# OpenCV hook (OPENCV_CMAKE_HOOKS_DIR): runs in OpenCV's configure right after the opencv_dnn
# target is created. Links the Debian libraries that our sources inside opencv_dnn use, so
# that OpenCV's own CMake files need no patch for them.

# The target was created in modules/dnn; linking it from here needs CMP0079 (this file runs
# in its own policy scope). OpenCV's ocv_target_link_libraries() would not see the policy:
# functions keep the policies of where they were defined.
cmake_policy(SET CMP0079 NEW)

# PCRE2: Unicode regular expressions of the byte-level BPE pre-tokenizers.
find_path(LLM_PCRE2_INCLUDE_DIR pcre2.h)
find_library(LLM_PCRE2_LIBRARY pcre2-8)
if(NOT LLM_PCRE2_INCLUDE_DIR OR NOT LLM_PCRE2_LIBRARY)
  message(FATAL_ERROR "opencv_dnn (LLM extension) needs PCRE2: apt-get install libpcre2-dev")
endif()
target_include_directories(opencv_dnn PRIVATE "${LLM_PCRE2_INCLUDE_DIR}")
target_link_libraries(opencv_dnn PRIVATE "${LLM_PCRE2_LIBRARY}")

# nlohmann-json (header only): Hugging Face tokenizer.json / tokenizer_config.json.
find_path(LLM_NLOHMANN_JSON_INCLUDE_DIR nlohmann/json.hpp)
if(NOT LLM_NLOHMANN_JSON_INCLUDE_DIR)
  message(FATAL_ERROR "opencv_dnn (LLM extension) needs nlohmann-json: apt-get install nlohmann-json3-dev")
endif()
target_include_directories(opencv_dnn PRIVATE "${LLM_NLOHMANN_JSON_INCLUDE_DIR}")
