package motionbricks

// #include <motionbricks/motionbricks.h>
import "C"

// The bare C calls of the overhead benchmark (bench_test.go), straight through cgo; each returns
// the time of the call alone, measured with the caller's clock, and frees the motion afterwards.

func rawPlan(a *Agent, c *Command, clock func() int64) int64 {
	var b errBuf
	var out *C.mb_motion
	t0 := clock()
	C.mb_agent_plan(a.h, c.h, &out, b.ptr(), b.cap())
	t1 := clock()
	C.mb_motion_free(out)
	return t1 - t0
}

func rawHistory(a *Agent, clock func() int64) int64 {
	var b errBuf
	var out *C.mb_motion
	t0 := clock()
	C.mb_agent_get_history(a.h, &out, b.ptr(), b.cap())
	t1 := clock()
	C.mb_motion_free(out)
	return t1 - t0
}

// rawCall is one trivial cgo call (mb_abi_version): the cgo transition itself.
func rawCall() { C.mb_abi_version() }
