package motionbricks

// #include <motionbricks/motionbricks.h>
// #include <time.h>
// static long long mb_bench_thread_ns(void) {
//     struct timespec t;
//     clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
//     return (long long) t.tv_sec * 1000000000LL + t.tv_nsec;
// }
import "C"

// The bare C calls of the overhead benchmark (bench_test.go), straight through cgo: each returns
// the call's own time by the caller's clocks and frees the motion afterwards.

func rawPlan(a *Agent, c *Command, clock func() [2]int64) [2]int64 {
	var b errBuf
	var out *C.mb_motion
	t0 := clock()
	C.mb_agent_plan(a.h, c.h, &out, b.ptr(), b.cap())
	t1 := clock()
	C.mb_motion_free(out)
	return [2]int64{t1[0] - t0[0], t1[1] - t0[1]}
}

func rawHistory(a *Agent, clock func() [2]int64) [2]int64 {
	var b errBuf
	var out *C.mb_motion
	t0 := clock()
	C.mb_agent_get_history(a.h, &out, b.ptr(), b.cap())
	t1 := clock()
	C.mb_motion_free(out)
	return [2]int64{t1[0] - t0[0], t1[1] - t0[1]}
}

// rawCall is one trivial cgo call (mb_abi_version): the cgo transition itself.
func rawCall() { C.mb_abi_version() }

// threadCPUNanos is the calling OS thread's CPU time (the benchmark locks its goroutine to a thread).
func threadCPUNanos() int64 { return int64(C.mb_bench_thread_ns()) }
