# Included by apps/CMakeLists.txt: llm_server, the OpenAI-compatible HTTP server (doc/server.md).
# cpp-httplib from Debian (libcpp-httplib-dev), found through pkg-config: its compile flags
# (OpenSSL, zlib, brotli support) must match the library's build.
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
pkg_check_modules(CPP_HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
set(server_root "${LLM_PROJECT_ROOT}/server")

# The chat page is compiled in, so that the program is one file to deploy.
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${server_root}/chat_page.html")
file(READ "${server_root}/chat_page.html" chat_page_html)
file(CONFIGURE OUTPUT "${CMAKE_CURRENT_BINARY_DIR}/chat_page_html.cpp"
     CONTENT "// Generated from server/chat_page.html by server/server.cmake.\nnamespace llm_server {\nextern const char* const kChatPageHtml;\nconst char* const kChatPageHtml = R\"chat_page_html(@chat_page_html@)chat_page_html\";\n}\n"
     @ONLY)

# The request parsing, also linked into the fuzz target (tools/fuzz).
add_library(llm_server_api STATIC "${server_root}/openai_request.cpp" "${server_root}/openai_response.cpp"
            "${server_root}/tool_calls.cpp")
target_link_libraries(llm_server_api PUBLIC ${OpenCV_LIBS})
add_executable(llm_server "${server_root}/llm_server.cpp" "${server_root}/api_server.cpp"
               "${server_root}/client_connection.cpp" "${CMAKE_CURRENT_BINARY_DIR}/chat_page_html.cpp")
target_link_libraries(llm_server PRIVATE llm_server_api PkgConfig::CPP_HTTPLIB Threads::Threads)
