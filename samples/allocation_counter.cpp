// See allocation_counter.hpp. glibc exports its allocator as __libc_*; the definitions below
// take precedence over libc's for every library of the process.
#include "allocation_counter.hpp"

#include <atomic>
#include <cerrno>
#include <cstddef>

extern "C" {
void* __libc_malloc(size_t size);
void* __libc_calloc(size_t count, size_t size);
void* __libc_realloc(void* ptr, size_t size);
void* __libc_memalign(size_t alignment, size_t size);
void __libc_free(void* ptr);
}

static std::atomic<long> g_allocations{0};

long heapAllocations()
{
    return g_allocations.load();
}

extern "C" {
void* malloc(size_t size)
{
    g_allocations++;
    return __libc_malloc(size);
}
void* calloc(size_t count, size_t size)
{
    g_allocations++;
    return __libc_calloc(count, size);
}
void* realloc(void* ptr, size_t size)
{
    g_allocations++;
    return __libc_realloc(ptr, size);
}
void* memalign(size_t alignment, size_t size)
{
    g_allocations++;
    return __libc_memalign(alignment, size);
}
void* aligned_alloc(size_t alignment, size_t size)
{
    g_allocations++;
    return __libc_memalign(alignment, size);
}
int posix_memalign(void** ptr, size_t alignment, size_t size)
{
    g_allocations++;
    *ptr = __libc_memalign(alignment, size);
    return *ptr ? 0 : ENOMEM;
}
void free(void* ptr)
{
    __libc_free(ptr);
}
}
