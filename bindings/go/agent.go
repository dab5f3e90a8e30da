package motionbricks

// #include <motionbricks/inference.h>
// #include <stdlib.h>
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"
)

// Style is a loaded .mbstyle file.
type Style struct{ h *C.mb_style }

// LoadStyle loads and validates a .mbstyle file for this model.
func (m *Model) LoadStyle(path string) (*Style, error) {
	if m.h == nil {
		return nil, ErrClosed
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var b errBuf
	s := &Style{}
	err := check(C.mb_style_load(m.h, cpath, &s.h, b.ptr(), b.cap()), &b)
	runtime.KeepAlive(m)
	if err != nil {
		return nil, err
	}
	runtime.SetFinalizer(s, (*Style).Close)
	return s, nil
}

// Close frees the style. Commands using it must not plan afterwards.
func (s *Style) Close() error {
	if s.h != nil {
		C.mb_style_free(s.h)
		s.h = nil
		runtime.SetFinalizer(s, nil)
	}
	return nil
}

// Name is the style's name ("walk").
func (s *Style) Name() string {
	if s.h == nil {
		return ""
	}
	var b errBuf
	var name *C.char
	if check(C.mb_style_get_name(s.h, &name, b.ptr(), b.cap()), &b) != nil {
		return ""
	}
	out := C.GoString(name)
	runtime.KeepAlive(s)
	return out
}

// SetSpeed overrides the style's speed (m/s), used by commands whose target speed is negative.
func (s *Style) SetSpeed(metresPerSecond float32) error {
	if s.h == nil {
		return ErrClosed
	}
	var b errBuf
	return check(C.mb_style_set_speed(s.h, C.float(metresPerSecond), b.ptr(), b.cap()), &b)
}

// Command is what an agent plan should do (pure data; the style is borrowed and kept alive here).
type Command struct {
	h     *C.mb_command
	style *Style
}

// NewCommand makes a command with the defaults: no style, standing, facing +Z, the style's speed.
func (l *Library) NewCommand() (*Command, error) {
	var b errBuf
	c := &Command{}
	if err := check(C.mb_command_create(&c.h, b.ptr(), b.cap()), &b); err != nil {
		return nil, err
	}
	runtime.SetFinalizer(c, (*Command).Close)
	return c, nil
}

// Close frees the command (not its style).
func (c *Command) Close() error {
	if c.h != nil {
		C.mb_command_free(c.h)
		c.h = nil
		c.style = nil
		runtime.SetFinalizer(c, nil)
	}
	return nil
}

func (c *Command) set(f func(*errBuf) C.mb_status) error {
	if c.h == nil {
		return ErrClosed
	}
	var b errBuf
	return check(f(&b), &b)
}

// SetStyle selects the style (nil clears it).
func (c *Command) SetStyle(s *Style) error {
	var h *C.mb_style
	if s != nil {
		if s.h == nil {
			return ErrClosed
		}
		h = s.h
	}
	err := c.set(func(b *errBuf) C.mb_status { return C.mb_command_set_style(c.h, h, b.ptr(), b.cap()) })
	if err == nil {
		c.style = s
	}
	return err
}

// SetMovement sets the world travel direction (motion space, Y ignored; zero = stand still).
func (c *Command) SetMovement(x, y, z float32) error {
	return c.set(func(b *errBuf) C.mb_status {
		return C.mb_command_set_movement_direction(c.h, C.float(x), C.float(y), C.float(z), b.ptr(), b.cap())
	})
}

// SetFacing sets the direction to face (not zero).
func (c *Command) SetFacing(x, y, z float32) error {
	return c.set(func(b *errBuf) C.mb_status {
		return C.mb_command_set_facing_direction(c.h, C.float(x), C.float(y), C.float(z), b.ptr(), b.cap())
	})
}

// SetSpeed sets the target speed (m/s); negative down to -1 selects the style's speed.
func (c *Command) SetSpeed(metresPerSecond float32) error {
	return c.set(func(b *errBuf) C.mb_status {
		return C.mb_command_set_target_speed(c.h, C.float(metresPerSecond), b.ptr(), b.cap())
	})
}

// SetSeed sets the per-plan random seed.
func (c *Command) SetSeed(seed uint64) error {
	return c.set(func(b *errBuf) C.mb_status { return C.mb_command_set_seed(c.h, C.uint64_t(seed), b.ptr(), b.cap()) })
}

// SetSamplingArgmax selects argmax pose tokens (false: Gumbel sampling).
func (c *Command) SetSamplingArgmax(enabled bool) error {
	return c.set(func(b *errBuf) C.mb_status {
		return C.mb_command_set_sampling_argmax(c.h, boolU32(enabled), b.ptr(), b.cap())
	})
}

// SetWorldTarget sets an explicit world root target and heading (radians about +Y), used when enabled.
func (c *Command) SetWorldTarget(x, y, z, heading float32, enabled bool) error {
	return c.set(func(b *errBuf) C.mb_status {
		return C.mb_command_set_world_target(c.h, C.float(x), C.float(y), C.float(z), C.float(heading),
			boolU32(enabled), b.ptr(), b.cap())
	})
}

// Agent is the upstream demo's animation controller on one model (which it keeps alive).
type Agent struct {
	h     *C.mb_agent
	model *Model
}

// NewAgent makes an agent without history on this model.
func (m *Model) NewAgent() (*Agent, error) {
	if m.h == nil {
		return nil, ErrClosed
	}
	var b errBuf
	a := &Agent{model: m}
	if err := check(C.mb_agent_create(m.h, &a.h, b.ptr(), b.cap()), &b); err != nil {
		return nil, err
	}
	m.agents++
	runtime.SetFinalizer(a, (*Agent).Close)
	return a, nil
}

// Close frees the agent (its motions stay valid).
func (a *Agent) Close() error {
	if a.h != nil {
		C.mb_agent_free(a.h)
		a.h = nil
		a.model.agents--
		runtime.SetFinalizer(a, nil)
	}
	return nil
}

func (a *Agent) call(f func(*errBuf) C.mb_status) error {
	if a.h == nil {
		return ErrClosed
	}
	var b errBuf
	err := check(f(&b), &b)
	runtime.KeepAlive(a)
	return err
}

// Reset sets the history to the style's clip (nil clears it).
func (a *Agent) Reset(s *Style) error {
	var h *C.mb_style
	if s != nil {
		if s.h == nil {
			return ErrClosed
		}
		h = s.h
	}
	err := a.call(func(b *errBuf) C.mb_status { return C.mb_agent_reset(a.h, h, b.ptr(), b.cap()) })
	runtime.KeepAlive(s)
	return err
}

// SetContext sets the history to poses: roots [frames*3] and local quaternions x y z w
// [frames*34*4]; the last 4 frames are used.
func (a *Agent) SetContext(roots, localXYZW []float32) error {
	frames := len(roots) / 3
	if len(roots) != frames*3 || len(localXYZW) != frames*34*4 {
		return &Error{StatusInvalidArgument, fmt.Sprintf("SetContext: %d root and %d rotation floats are not "+
			"frames*3 and frames*136", len(roots), len(localXYZW))}
	}
	return a.call(func(b *errBuf) C.mb_status {
		return C.mb_agent_set_context(a.h, floatPtr(roots), floatPtr(localXYZW), C.uint64_t(frames), 34, b.ptr(), b.cap())
	})
}

// Plan plans the next 24..64 frames from the history at the cursor; the plan becomes the history.
func (a *Agent) Plan(c *Command) (*Motion, error) {
	if c.h == nil {
		return nil, ErrClosed
	}
	var out *C.mb_motion
	err := a.call(func(b *errBuf) C.mb_status { return C.mb_agent_plan(a.h, c.h, &out, b.ptr(), b.cap()) })
	runtime.KeepAlive(c)
	if err != nil {
		return nil, err
	}
	return newMotion(out), nil
}

// Advance moves the cursor by the frames shown since the plan.
func (a *Agent) Advance(frames uint32) error {
	return a.call(func(b *errBuf) C.mb_status { return C.mb_agent_advance(a.h, C.uint32_t(frames), b.ptr(), b.cap()) })
}

// History is a copy of the agent's whole history as a new motion (0 frames without a history).
func (a *Agent) History() (*Motion, error) {
	var out *C.mb_motion
	if err := a.call(func(b *errBuf) C.mb_status { return C.mb_agent_get_history(a.h, &out, b.ptr(), b.cap()) }); err != nil {
		return nil, err
	}
	return newMotion(out), nil
}

// Cursor is the history frame the next plan starts from.
func (a *Agent) Cursor() (uint64, error) {
	var n C.uint64_t
	err := a.call(func(b *errBuf) C.mb_status { return C.mb_agent_get_cursor(a.h, &n, b.ptr(), b.cap()) })
	return uint64(n), err
}
