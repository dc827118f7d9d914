// ThreadSanitizer cannot see the ordering that userfaultfd write-protect gives: once a page is
// write-protected, the application's earlier writes to it are complete and no new ones can start.
// Reads of a page under write-protect (write-back) are therefore not races; these tell TSan so.
#pragma once

#if defined(__SANITIZE_THREAD__)
extern "C" void AnnotateIgnoreReadsBegin(const char* file, int line);
extern "C" void AnnotateIgnoreReadsEnd(const char* file, int line);
#define AUTOPAGER_WRITE_PROTECTED_READS_BEGIN() AnnotateIgnoreReadsBegin(__FILE__, __LINE__)
#define AUTOPAGER_WRITE_PROTECTED_READS_END() AnnotateIgnoreReadsEnd(__FILE__, __LINE__)
#else
#define AUTOPAGER_WRITE_PROTECTED_READS_BEGIN() ((void)0)
#define AUTOPAGER_WRITE_PROTECTED_READS_END() ((void)0)
#endif
