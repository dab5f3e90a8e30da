package motionbricks

// #include <motionbricks/inference.h>
import "C"

import (
	"runtime"
	"unsafe"
)

// Motion is a generated motion (immutable). Its getters return copies; Close frees the C motion.
type Motion struct{ h *C.mb_motion }

func newMotion(h *C.mb_motion) *Motion {
	m := &Motion{h}
	runtime.SetFinalizer(m, (*Motion).Close)
	return m
}

func newMotions(hs []*C.mb_motion) []*Motion {
	out := make([]*Motion, len(hs))
	for i, h := range hs {
		out[i] = newMotion(h)
	}
	return out
}

// Close frees the motion.
func (m *Motion) Close() error {
	if m.h != nil {
		C.mb_motion_free(m.h)
		m.h = nil
		runtime.SetFinalizer(m, nil)
	}
	return nil
}

type getter func(*C.mb_motion, **C.float, *C.uint64_t, *C.char, C.uint64_t) C.mb_status

func (m *Motion) floats(get getter) ([]float32, error) {
	if m.h == nil {
		return nil, ErrClosed
	}
	var b errBuf
	var data *C.float
	var n C.uint64_t
	if err := check(get(m.h, &data, &n, b.ptr(), b.cap()), &b); err != nil {
		return nil, err
	}
	out := make([]float32, n)
	if n > 0 {
		copy(out, unsafe.Slice((*float32)(unsafe.Pointer(data)), int(n)))
	}
	runtime.KeepAlive(m)
	return out, nil
}

func (m *Motion) count(get func(*C.mb_motion, *C.uint64_t, *C.char, C.uint64_t) C.mb_status) (int, error) {
	if m.h == nil {
		return 0, ErrClosed
	}
	var b errBuf
	var n C.uint64_t
	err := check(get(m.h, &n, b.ptr(), b.cap()), &b)
	runtime.KeepAlive(m)
	return int(n), err
}

// The cgo functions are wrapped so that they can be passed as values.
func getRoots(m *C.mb_motion, d **C.float, n *C.uint64_t, e *C.char, c C.uint64_t) C.mb_status {
	return C.mb_motion_get_root_translations(m, d, n, e, c)
}
func getRotations(m *C.mb_motion, d **C.float, n *C.uint64_t, e *C.char, c C.uint64_t) C.mb_status {
	return C.mb_motion_get_local_rotations_xyzw(m, d, n, e, c)
}
func getJoints(m *C.mb_motion, d **C.float, n *C.uint64_t, e *C.char, c C.uint64_t) C.mb_status {
	return C.mb_motion_get_joint_positions(m, d, n, e, c)
}
func getQpos(m *C.mb_motion, d **C.float, n *C.uint64_t, e *C.char, c C.uint64_t) C.mb_status {
	return C.mb_motion_get_mujoco_qpos(m, d, n, e, c)
}
func getTargetRoots(m *C.mb_motion, d **C.float, n *C.uint64_t, e *C.char, c C.uint64_t) C.mb_status {
	return C.mb_motion_get_target_root_translations(m, d, n, e, c)
}
func getTargetRotations(m *C.mb_motion, d **C.float, n *C.uint64_t, e *C.char, c C.uint64_t) C.mb_status {
	return C.mb_motion_get_target_local_rotations_xyzw(m, d, n, e, c)
}
func getFeatures(m *C.mb_motion, d **C.float, n *C.uint64_t, e *C.char, c C.uint64_t) C.mb_status {
	return C.mb_motion_get_global_features(m, d, n, e, c)
}
func getLogits(m *C.mb_motion, d **C.float, n *C.uint64_t, e *C.char, c C.uint64_t) C.mb_status {
	return C.mb_motion_get_duration_logits(m, d, n, e, c)
}

// FrameCount is the number of frames (24..64 for plans and inference).
func (m *Motion) FrameCount() (int, error) {
	return m.count(func(h *C.mb_motion, n *C.uint64_t, e *C.char, c C.uint64_t) C.mb_status {
		return C.mb_motion_get_frame_count(h, n, e, c)
	})
}

// TargetFrameCount is 4 for agent plans, 0 for stateless inference.
func (m *Motion) TargetFrameCount() (int, error) {
	return m.count(func(h *C.mb_motion, n *C.uint64_t, e *C.char, c C.uint64_t) C.mb_status {
		return C.mb_motion_get_target_frame_count(h, n, e, c)
	})
}

// RootTranslations is [frames*3] root positions (m, Y up).
func (m *Motion) RootTranslations() ([]float32, error) { return m.floats(getRoots) }

// LocalRotationsXYZW is [frames*34*4] local quaternions x, y, z, w.
func (m *Motion) LocalRotationsXYZW() ([]float32, error) { return m.floats(getRotations) }

// JointPositions is [frames*34*3] world joint positions.
func (m *Motion) JointPositions() ([]float32, error) { return m.floats(getJoints) }

// MujocoQpos is [frames*36] G1 MuJoCo qpos.
func (m *Motion) MujocoQpos() ([]float32, error) { return m.floats(getQpos) }

// TargetRootTranslations is [targets*3] (empty for stateless inference).
func (m *Motion) TargetRootTranslations() ([]float32, error) { return m.floats(getTargetRoots) }

// TargetLocalRotationsXYZW is [targets*34*4] (empty for stateless inference).
func (m *Motion) TargetLocalRotationsXYZW() ([]float32, error) { return m.floats(getTargetRotations) }

// GlobalFeatures is upstream predict's output [frames*414] (stateless inference only).
func (m *Motion) GlobalFeatures() ([]float32, error) { return m.floats(getFeatures) }

// DurationLogits are the 12 duration logits (stateless inference only).
func (m *Motion) DurationLogits() ([]float32, error) { return m.floats(getLogits) }

// Tokens is [tokens*8] sampled pose tokens.
func (m *Motion) Tokens() ([]int32, error) {
	if m.h == nil {
		return nil, ErrClosed
	}
	var b errBuf
	var data *C.int32_t
	var n C.uint64_t
	if err := check(C.mb_motion_get_tokens(m.h, &data, &n, b.ptr(), b.cap()), &b); err != nil {
		return nil, err
	}
	out := make([]int32, n)
	if n > 0 {
		copy(out, unsafe.Slice((*int32)(unsafe.Pointer(data)), int(n)))
	}
	runtime.KeepAlive(m)
	return out, nil
}

// StyleName is the style an agent plan's targets came from ("" for stateless inference).
func (m *Motion) StyleName() (string, error) {
	if m.h == nil {
		return "", ErrClosed
	}
	var b errBuf
	var s *C.char
	if err := check(C.mb_motion_get_style_name(m.h, &s, b.ptr(), b.cap()), &b); err != nil {
		return "", err
	}
	out := C.GoString(s)
	runtime.KeepAlive(m)
	return out, nil
}
