// Counts heap allocations of the whole process: linking allocation_counter.cpp into a program
// replaces the C allocator's entry points (which OpenCV's fastMalloc and C++'s operator new
// end in) with counting ones. Used by llm_kv_bench and the allocation test.
#ifndef OPENCV_DNN_LLM_ALLOCATION_COUNTER_HPP
#define OPENCV_DNN_LLM_ALLOCATION_COUNTER_HPP

//! Heap allocations (malloc, calloc, realloc, aligned forms) since the process started.
long heapAllocations();

#endif
