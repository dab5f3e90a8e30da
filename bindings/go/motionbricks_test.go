package motionbricks

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// MB_GO_BUNDLE / MB_GO_STYLES: a random small bundle and the demo styles (tests/go/CMakeLists.txt
// makes them); MB_GO_REFERENCE: the reference-small bundle; MB_SHARED_DIR: ../shared.
func env(t *testing.T, name string) string {
	v := os.Getenv(name)
	if v == "" {
		t.Skipf("skipped: %s not set", name)
	}
	if _, err := os.Stat(v); err != nil {
		t.Skipf("skipped: %s (%s) not found", v, name)
	}
	return v
}

func open(t *testing.T) *Library {
	lib, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	return lib
}

func load(t *testing.T, lib *Library, dir string) *Model {
	m, err := lib.LoadModel(dir, &Options{Device: DeviceCPU, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

const tol = 1e-4 // features, absolute (as the C ABI parity)

// every reference-small case through Model.Infer: exact durations and tokens, features within tol
func TestReferenceCasesThroughInfer(t *testing.T) {
	bundle := env(t, "MB_GO_REFERENCE")
	dir := filepath.Join(env(t, "MB_SHARED_DIR"), "fixtures", "reference-small")
	raw, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Skipf("skipped: %v", err)
	}
	var summary struct {
		Cases []struct {
			Name   string `json:"name"`
			Config struct {
				Steps    uint32 `json:"num_inference_step"`
				Argmax   bool   `json:"pose_token_sampling_use_argmax"`
				SkipEnd  bool   `json:"skip_ending_target_cond"`
				OutReach bool   `json:"allow_pred_out_of_reach_num_tokens"`
			} `json:"config"`
		} `json:"cases"`
	}
	must(t, json.Unmarshal(raw, &summary))
	lib := open(t)
	model := load(t, lib, bundle)
	defer model.Close()
	worst := 0.0
	for _, c := range summary.Cases {
		z, err := readNpz(filepath.Join(dir, "cases", c.Name+".npz"))
		must(t, err)
		r, err := lib.NewRequest()
		must(t, err)
		must(t, r.SetFeatures(FieldGlobalRoot, z["in_global_root_values"].f32()))
		must(t, r.SetFeatures(FieldLocalRoot, z["in_local_root_values"].f32()))
		must(t, r.SetFeatures(FieldPose, z["in_local_poses"].f32()))
		must(t, r.SetMask(FieldGlobalRoot, z["in_has_global_root_values"].bools()))
		must(t, r.SetMask(FieldLocalRoot, z["in_has_local_root_values"].bools()))
		must(t, r.SetMask(FieldPose, z["in_has_local_poses"].bools()))
		if a, ok := z["in_allowed_pred_num_tokens"]; ok {
			must(t, r.SetMask(FieldDurations, a.bools()))
		}
		if n := uint32(z["in_num_tokens"].data[0]); n != 18 {
			must(t, r.SetTokenCount(n))
		}
		must(t, r.SetInferenceSteps(c.Config.Steps))
		must(t, r.SetSamplingArgmax(c.Config.Argmax))
		must(t, r.SetSkipEndingTargetCond(c.Config.SkipEnd))
		must(t, r.SetAllowOutOfReach(c.Config.OutReach))
		if !c.Config.Argmax {
			must(t, r.SetGumbelUniforms(z["mid_step_gumbel_uniform"].f32()))
		}
		m, err := model.Infer(r)
		must(t, err)
		must(t, r.Close())
		n := int(z["out_pred_num_tokens"].data[0])
		frames, _ := m.FrameCount()
		if frames != 4*n {
			t.Fatalf("%s: %d frames, upstream %d", c.Name, frames, 4*n)
		}
		tokens, _ := m.Tokens()
		for i := 0; i < n*8; i++ {
			if float64(tokens[i]) != z["mid_pred_pose_tokens"].data[i] {
				t.Fatalf("%s: token %d differs", c.Name, i)
			}
		}
		feat, _ := m.GlobalFeatures()
		want := z["out_pred_global_poses"].data
		for i := range feat {
			worst = math.Max(worst, math.Abs(float64(feat[i])-want[i]))
		}
		if worst > tol {
			t.Fatalf("%s: features differ by %.2e", c.Name, worst)
		}
		must(t, m.Close())
	}
	t.Logf("%d cases: exact durations and tokens, features max err %.2e", len(summary.Cases), worst)
}

func agentSession(t *testing.T, lib *Library, model *Model, walk *Style, seed uint64) [][]float32 {
	agent, err := model.NewAgent()
	must(t, err)
	defer agent.Close()
	cmd, err := lib.NewCommand()
	must(t, err)
	defer cmd.Close()
	must(t, agent.Reset(walk))
	must(t, cmd.SetStyle(walk))
	must(t, cmd.SetMovement(0, 0, 1))
	must(t, cmd.SetFacing(0, 0, 1))
	must(t, cmd.SetSpeed(-1))
	must(t, cmd.SetSeed(seed))
	must(t, cmd.SetSamplingArgmax(false))
	var out [][]float32
	for i := 0; i < 3; i++ {
		plan, err := agent.Plan(cmd)
		must(t, err)
		frames, _ := plan.FrameCount()
		targets, _ := plan.TargetFrameCount()
		qpos, _ := plan.MujocoQpos()
		roots, _ := plan.RootTranslations()
		rots, _ := plan.LocalRotationsXYZW()
		name, _ := plan.StyleName()
		if frames < 24 || frames > 64 || frames%4 != 0 || targets != 4 || len(qpos) != frames*36 ||
			len(roots) != frames*3 || len(rots) != frames*136 || name != "walk" {
			t.Fatalf("plan %d: %d frames, %d targets, %d qpos floats, style %q", i, frames, targets, len(qpos), name)
		}
		out = append(out, qpos)
		must(t, plan.Close())
		must(t, agent.Advance(16))
	}
	return out
}

func TestAgentSession(t *testing.T) {
	lib := open(t)
	model := load(t, lib, env(t, "MB_GO_BUNDLE"))
	defer model.Close()
	walk, err := model.LoadStyle(filepath.Join(env(t, "MB_GO_STYLES"), "walk.mbstyle"))
	must(t, err)
	defer walk.Close()
	a, b := agentSession(t, lib, model, walk, 3), agentSession(t, lib, model, walk, 3)
	for i := range a {
		for k := range a[i] {
			if a[i][k] != b[i][k] {
				t.Fatalf("plan %d: the same session differs at %d", i, k)
			}
		}
	}
	skel, err := model.Skeleton()
	must(t, err)
	if len(skel) != 34 || skel[0].Name != "pelvis_skel" || skel[0].Parent != -1 || skel[1].Parent != 0 {
		t.Fatalf("skeleton %+v", skel[:2])
	}
	// SetContext from a plan's last frames, then PlanBatch equals one Plan per agent
	agents := make([]*Agent, 2)
	cmds := make([]*Command, 2)
	for i := range agents {
		agents[i], err = model.NewAgent()
		must(t, err)
		defer agents[i].Close()
		cmds[i], err = lib.NewCommand()
		must(t, err)
		defer cmds[i].Close()
		must(t, cmds[i].SetStyle(walk))
		must(t, cmds[i].SetSeed(uint64(i)))
		must(t, agents[i].Reset(walk))
	}
	first, err := agents[0].Plan(cmds[0])
	must(t, err)
	roots, _ := first.RootTranslations()
	rots, _ := first.LocalRotationsXYZW()
	frames := len(roots) / 3
	must(t, agents[0].SetContext(roots[(frames-4)*3:], rots[(frames-4)*136:]))
	must(t, agents[1].SetContext(roots[(frames-4)*3:], rots[(frames-4)*136:]))
	batch, err := model.PlanBatch(agents, cmds)
	must(t, err)
	for i := range agents {
		must(t, agents[i].SetContext(roots[(frames-4)*3:], rots[(frames-4)*136:]))
		one, err := agents[i].Plan(cmds[i])
		must(t, err)
		x, _ := one.MujocoQpos()
		y, _ := batch[i].MujocoQpos()
		if len(x) != len(y) {
			t.Fatalf("lane %d: %d vs %d floats", i, len(x), len(y))
		}
		for k := range x {
			if x[k] != y[k] {
				t.Fatalf("lane %d: PlanBatch differs from Plan at %d", i, k)
			}
		}
	}
	if err := agents[0].SetContext(roots[:6], rots[:136]); !errors.Is(err, &Error{Status: StatusInvalidArgument}) {
		t.Fatalf("SetContext with mismatched sizes: %v", err)
	}
}

func TestErrors(t *testing.T) {
	if err := checkABI(2); err == nil || !strings.Contains(err.Error(), "C ABI version 2; this binding needs version 1") {
		t.Fatalf("checkABI(2) = %v", err)
	}
	lib := open(t)
	if lib.ABIVersion() != 1 {
		t.Fatal("ABI version")
	}
	_, err := lib.LoadModel(filepath.Join(t.TempDir(), "nothing-here"), nil)
	var e *Error
	if !errors.As(err, &e) || e.Status != StatusIOError || !strings.Contains(e.Message, "nothing-here") {
		t.Fatalf("missing bundle: %v", err)
	}
	if !errors.Is(err, &Error{Status: StatusIOError}) || errors.Is(err, &Error{Status: StatusInvalidFormat}) {
		t.Fatal("errors.Is by status")
	}
	if StatusBackendUnavailable.String() != "backend unavailable" {
		t.Fatalf("status name %q", StatusBackendUnavailable.String())
	}
	bundle := env(t, "MB_GO_BUNDLE")
	if _, err := lib.LoadModel(bundle, &Options{Device: DeviceVulkan}); !errors.Is(err, &Error{Status: StatusBackendUnavailable}) {
		t.Fatalf("vulkan: %v", err)
	}
	if _, err := lib.LoadModel(bundle, &Options{Device: DeviceCPU, Precision: PrecisionBF16}); !errors.Is(err, &Error{Status: StatusBackendUnavailable}) {
		t.Fatalf("bf16 on the CPU: %v", err)
	}
	if _, err := lib.LoadModel(bundle, &Options{Device: 9}); !errors.Is(err, &Error{Status: StatusInvalidArgument}) {
		t.Fatalf("device 9: %v", err)
	}
	model := load(t, lib, bundle)
	defer model.Close()
	if _, err := model.LoadStyle(filepath.Join(bundle, "manifest.json")); !errors.Is(err, &Error{Status: StatusInvalidFormat}) {
		t.Fatalf("manifest as a style: %v", err)
	}
	cmd, _ := lib.NewCommand()
	defer cmd.Close()
	if err := cmd.SetSpeed(float32(math.NaN())); !errors.Is(err, &Error{Status: StatusInvalidArgument}) {
		t.Fatalf("NaN speed: %v", err)
	}
	if err := cmd.SetFacing(0, 0, 0); !errors.Is(err, &Error{Status: StatusInvalidArgument}) {
		t.Fatalf("zero facing: %v", err)
	}
	agent, _ := model.NewAgent()
	defer agent.Close()
	if _, err := agent.Plan(cmd); !errors.Is(err, &Error{Status: StatusInvalidArgument}) {
		t.Fatalf("plan without a style: %v", err)
	}
	if _, err := model.InferBatch(nil); !errors.Is(err, &Error{Status: StatusInvalidArgument}) {
		t.Fatalf("empty batch: %v", err)
	}
	r, _ := lib.NewRequest()
	defer r.Close()
	if _, err := model.Infer(r); !errors.Is(err, &Error{Status: StatusInvalidArgument}) {
		t.Fatalf("incomplete request: %v", err)
	}
}

func TestCloseTwice(t *testing.T) {
	lib := open(t)
	model := load(t, lib, env(t, "MB_GO_BUNDLE"))
	walk, err := model.LoadStyle(filepath.Join(env(t, "MB_GO_STYLES"), "walk.mbstyle"))
	must(t, err)
	agent, err := model.NewAgent()
	must(t, err)
	cmd, _ := lib.NewCommand()
	req, _ := lib.NewRequest()
	must(t, cmd.SetStyle(walk))
	must(t, agent.Reset(walk))
	plan, err := agent.Plan(cmd)
	must(t, err)
	if err := model.Close(); err != ErrAgentsOpen {
		t.Fatalf("model closed under its agent: %v", err)
	}
	for i := 0; i < 2; i++ {
		must(t, agent.Close())
		must(t, cmd.Close())
		must(t, walk.Close())
		must(t, req.Close())
		must(t, model.Close())
	}
	// the motion outlives everything, then closes twice
	if frames, err := plan.FrameCount(); err != nil || frames < 24 {
		t.Fatalf("motion after its owners closed: %d, %v", frames, err)
	}
	must(t, plan.Close())
	must(t, plan.Close())
	if _, err := plan.FrameCount(); err != ErrClosed {
		t.Fatalf("closed motion: %v", err)
	}
	if _, err := agent.Plan(cmd); err != ErrClosed {
		t.Fatalf("closed agent: %v", err)
	}
	if _, err := model.NewAgent(); err != ErrClosed {
		t.Fatalf("closed model: %v", err)
	}
}

// the README's Go example, built and run in a directory holding models/g1-f32 and styles/
func TestQuickstartExample(t *testing.T) {
	bundle, styles := env(t, "MB_GO_BUNDLE"), env(t, "MB_GO_STYLES")
	dir := t.TempDir()
	exe := filepath.Join(dir, "quickstart")
	build := exec.Command("go", "build", "-o", exe, "./examples/quickstart")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	must(t, os.Mkdir(filepath.Join(dir, "models"), 0o755))
	must(t, os.Symlink(bundle, filepath.Join(dir, "models", "g1-f32")))
	must(t, os.Symlink(styles, filepath.Join(dir, "styles")))
	run := exec.Command(exe)
	run.Dir = dir
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("quickstart: %v\n%s", err, out)
	}
	if n := len(regexp.MustCompile(`(?m)^\d+ frames, root ends at`).FindAll(out, -1)); n != 3 {
		t.Fatalf("quickstart printed:\n%s", out)
	}
}
