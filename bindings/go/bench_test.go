package motionbricks

import (
	"os"
	"runtime"
	"sort"
	"strconv"
	"testing"
	"time"
)

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

var clockNames = [2]string{"wall", "cpu"}

// paired runs n rounds of bare, binding, binding, bare (cancelling order effects) after 20 warm-up
// rounds: per clock, medians of the bare and binding times and of their paired differences, in µs.
func paired(n int, bare, binding func() [2]int64) [2][3]float64 {
	var out [2][3]float64
	var raw, wrapped, diff [2][]float64
	for i := 0; i < n+20; i++ {
		r0, w0, w1, r1 := bare(), binding(), binding(), bare()
		if i < 20 {
			continue
		}
		for k := 0; k < 2; k++ {
			r, w := float64(r0[k]+r1[k])/2e3, float64(w0[k]+w1[k])/2e3
			raw[k], wrapped[k], diff[k] = append(raw[k], r), append(wrapped[k], w), append(diff[k], w-r)
		}
	}
	for k := 0; k < 2; k++ {
		out[k] = [3]float64{median(raw[k]), median(wrapped[k]), median(diff[k])}
	}
	return out
}

// TestPlanOverhead (bench/bindings/plan-overhead.sh sets MB_BENCH_PLANS): Agent.Plan against
// mb_agent_plan through cgo, and Agent.History (the same wrapper path around a C call of
// microseconds) against mb_agent_get_history, by the wall clock and the thread's CPU clock;
// see bench/bindings/plan_overhead.py.
func TestPlanOverhead(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("MB_BENCH_PLANS"))
	if n == 0 {
		t.Skip("skipped: set MB_BENCH_PLANS to run the benchmark")
	}
	runtime.LockOSThread() // one OS thread: its CPU clock is this goroutine's
	defer runtime.UnlockOSThread()
	lib := open(t)
	model := load(t, lib, env(t, "MB_GO_BUNDLE"))
	defer model.Close()
	style, err := model.LoadStyle(env(t, "MB_GO_STYLE"))
	must(t, err)
	defer style.Close()
	agent, err := model.NewAgent()
	must(t, err)
	defer agent.Close()
	cmd, _ := lib.NewCommand()
	defer cmd.Close()
	must(t, cmd.SetStyle(style))
	must(t, cmd.SetMovement(0, 0, 1))
	must(t, cmd.SetSeed(1))
	start := time.Now()
	clock := func() [2]int64 { return [2]int64{int64(time.Since(start)), threadCPUNanos()} }
	timed := func(f func()) [2]int64 {
		t0 := clock()
		f()
		t1 := clock()
		return [2]int64{t1[0] - t0[0], t1[1] - t0[1]}
	}
	calls := make([]float64, 2000)
	for i := range calls {
		t0 := time.Since(start)
		rawCall()
		calls[i] = float64(time.Since(start)-t0) / 1e3
	}
	one := median(calls)
	must(t, agent.Reset(style))
	_, err = agent.Plan(cmd)
	must(t, err)
	report := func(what string, f [2][3]float64) {
		for k, v := range f {
			t.Logf("go %s, %s clock: bare %.1f us, binding %.1f us; paired difference %.2f us + one cgo call %.2f us "+
				"= overhead %.2f us", what, clockNames[k], v[0], v[1], v[2], one, v[2]+one)
		}
	}
	report("motion call (Agent.History vs mb_agent_get_history)", paired(4*n,
		func() [2]int64 { return rawHistory(agent, clock) },
		func() [2]int64 {
			var m *Motion
			dt := timed(func() { m, _ = agent.History() })
			m.Close()
			return dt
		}))
	report("plan (Agent.Plan vs mb_agent_plan, "+strconv.Itoa(n)+" x 2 plans)", paired(n,
		func() [2]int64 {
			must(t, agent.Reset(style))
			return rawPlan(agent, cmd, clock)
		},
		func() [2]int64 {
			must(t, agent.Reset(style))
			var m *Motion
			dt := timed(func() { m, _ = agent.Plan(cmd) })
			m.Close()
			return dt
		}))
}
