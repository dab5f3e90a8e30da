package motionbricks

import (
	"os"
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

// paired runs n rounds of bare, binding, binding, bare (cancelling order effects) after 20 warm-up
// rounds: medians of the bare and binding times and of their paired differences, in µs.
func paired(n int, bare, binding func() int64) (float64, float64, float64) {
	var raw, wrapped, diff []float64
	for i := 0; i < n+20; i++ {
		r0, w0, w1, r1 := bare(), binding(), binding(), bare()
		if i >= 20 {
			raw = append(raw, float64(r0+r1)/2e3)
			wrapped = append(wrapped, float64(w0+w1)/2e3)
			diff = append(diff, float64(w0+w1-r0-r1)/2e3)
		}
	}
	return median(raw), median(wrapped), median(diff)
}

// TestPlanOverhead (bench/bindings/plan-overhead.sh sets MB_BENCH_PLANS): Agent.Plan against
// mb_agent_plan through cgo, and Agent.History (the same wrapper path around a C call of
// microseconds) against mb_agent_get_history; see bench/bindings/plan_overhead.py.
func TestPlanOverhead(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("MB_BENCH_PLANS"))
	if n == 0 {
		t.Skip("skipped: set MB_BENCH_PLANS to run the benchmark")
	}
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
	clock := func() int64 { return int64(time.Since(start)) }
	timed := func(f func()) int64 {
		t0 := clock()
		f()
		return clock() - t0
	}
	calls := make([]float64, 2000)
	for i := range calls {
		calls[i] = float64(timed(rawCall)) / 1e3
	}
	one := median(calls)
	must(t, agent.Reset(style))
	_, err = agent.Plan(cmd)
	must(t, err)
	r, w, d := paired(4*n, func() int64 { return rawHistory(agent, clock) }, func() int64 {
		var m *Motion
		dt := timed(func() { m, _ = agent.History() })
		m.Close()
		return dt
	})
	t.Logf("go motion call: bare mb_agent_get_history %.2f us, Agent.History %.2f us; binding %.2f us + one cgo "+
		"call %.2f us = overhead %.2f us", r, w, d, one, d+one)
	r, w, d = paired(n, func() int64 {
		must(t, agent.Reset(style))
		return rawPlan(agent, cmd, clock)
	}, func() int64 {
		must(t, agent.Reset(style))
		var m *Motion
		dt := timed(func() { m, _ = agent.Plan(cmd) })
		m.Close()
		return dt
	})
	t.Logf("go plan: bare mb_agent_plan %.1f us, Agent.Plan %.1f us (medians of %d x 2); paired difference %.2f us "+
		"+ one cgo call %.2f us = overhead %.2f us", r, w, n, d, one, d+one)
}
