package motionbricks

// #include <motionbricks/inference.h>
// #include <stdlib.h>
import "C"

import (
	"errors"
	"runtime"
	"unsafe"
)

// Device selects where a model computes.
type Device uint32

// The mb_device values.
const (
	DeviceAuto   Device = 0
	DeviceCPU    Device = 1
	DeviceVulkan Device = 2
	DeviceCUDA   Device = 3
)

// Precision is the arithmetic of the networks (only F32 gives upstream's numbers within the
// parity tolerances; TF32 and BF16 run on CUDA only).
type Precision uint32

// The mb_precision values.
const (
	PrecisionF32  Precision = 0
	PrecisionTF32 Precision = 1
	PrecisionBF16 Precision = 2
)

// Options are the runtime options of LoadModel (zero value: auto device, one thread per core, F32).
type Options struct {
	Device    Device
	Threads   uint32 // 0 = one per hardware thread
	Precision Precision
}

// Model is a loaded bundle: immutable, shareable between goroutines.
type Model struct {
	h      *C.mb_model
	agents int // open agents, which borrow the model
}

// LoadModel loads and validates a bundle directory.
func (l *Library) LoadModel(dir string, opts *Options) (*Model, error) {
	var b errBuf
	var o *C.mb_runtime_options
	if err := check(C.mb_runtime_options_create(&o, b.ptr(), b.cap()), &b); err != nil {
		return nil, err
	}
	defer C.mb_runtime_options_free(o)
	if opts != nil {
		if err := check(C.mb_runtime_options_set_device(o, C.mb_device(opts.Device), b.ptr(), b.cap()), &b); err != nil {
			return nil, err
		}
		if err := check(C.mb_runtime_options_set_threads(o, C.uint32_t(opts.Threads), b.ptr(), b.cap()), &b); err != nil {
			return nil, err
		}
		if err := check(C.mb_runtime_options_set_precision(o, C.mb_precision(opts.Precision), b.ptr(), b.cap()), &b); err != nil {
			return nil, err
		}
	}
	cdir := C.CString(dir)
	defer C.free(unsafe.Pointer(cdir))
	m := &Model{}
	if err := check(C.mb_model_load(cdir, o, &m.h, b.ptr(), b.cap()), &b); err != nil {
		return nil, err
	}
	runtime.SetFinalizer(m, (*Model).Close)
	return m, nil
}

// ErrClosed is returned by calls on a closed object.
var ErrClosed = errors.New("motionbricks: object is closed")

// ErrAgentsOpen is returned by Model.Close while agents made from the model are open.
var ErrAgentsOpen = errors.New("motionbricks: close the model's agents before the model")

// Close frees the model (motions made from it stay valid). Its agents must be closed first.
func (m *Model) Close() error {
	if m.h == nil {
		return nil
	}
	if m.agents > 0 {
		return ErrAgentsOpen
	}
	C.mb_model_free(m.h)
	m.h = nil
	runtime.SetFinalizer(m, nil)
	return nil
}

// Joint is one joint of the model's skeleton.
type Joint struct {
	Name   string
	Parent int32      // -1 for the root
	Rest   [3]float32 // rest position relative to the pelvis (m, Y up, Z forward)
}

// Skeleton is the model's G1Skeleton34.
func (m *Model) Skeleton() ([]Joint, error) {
	if m.h == nil {
		return nil, ErrClosed
	}
	var b errBuf
	var n C.uint32_t
	if err := check(C.mb_model_get_joint_count(m.h, &n, b.ptr(), b.cap()), &b); err != nil {
		return nil, err
	}
	out := make([]Joint, n)
	for j := range out {
		var name *C.char
		var parent C.int32_t
		var x, y, z C.float
		if err := check(C.mb_model_get_joint_name(m.h, C.uint32_t(j), &name, b.ptr(), b.cap()), &b); err != nil {
			return nil, err
		}
		if err := check(C.mb_model_get_joint_parent(m.h, C.uint32_t(j), &parent, b.ptr(), b.cap()), &b); err != nil {
			return nil, err
		}
		if err := check(C.mb_model_get_neutral_joint_position(m.h, C.uint32_t(j), &x, &y, &z, b.ptr(), b.cap()), &b); err != nil {
			return nil, err
		}
		out[j] = Joint{C.GoString(name), int32(parent), [3]float32{float32(x), float32(y), float32(z)}}
	}
	runtime.KeepAlive(m)
	return out, nil
}

// ParameterCount is the number of learned parameters.
func (m *Model) ParameterCount() (uint64, error) {
	if m.h == nil {
		return 0, ErrClosed
	}
	var b errBuf
	var n C.uint64_t
	err := check(C.mb_model_get_parameter_count(m.h, &n, b.ptr(), b.cap()), &b)
	runtime.KeepAlive(m)
	return uint64(n), err
}

// Infer runs stateless inference on a request.
func (m *Model) Infer(r *Request) (*Motion, error) {
	if m.h == nil || r.h == nil {
		return nil, ErrClosed
	}
	var b errBuf
	var out *C.mb_motion
	err := check(C.mb_model_infer(m.h, r.h, &out, b.ptr(), b.cap()), &b)
	runtime.KeepAlive(m)
	runtime.KeepAlive(r)
	if err != nil {
		return nil, err
	}
	return newMotion(out), nil
}

// InferBatch runs 1..64 requests at once: one motion per request, all or nothing.
func (m *Model) InferBatch(reqs []*Request) ([]*Motion, error) {
	if m.h == nil {
		return nil, ErrClosed
	}
	hs := make([]*C.mb_inference_request, len(reqs)+1)
	for i, r := range reqs {
		if r.h == nil {
			return nil, ErrClosed
		}
		hs[i] = r.h
	}
	outs := make([]*C.mb_motion, len(reqs)+1)
	var b errBuf
	err := check(C.mb_model_infer_batch(m.h, &hs[0], C.uint64_t(len(reqs)), &outs[0], b.ptr(), b.cap()), &b)
	runtime.KeepAlive(m)
	runtime.KeepAlive(reqs)
	if err != nil {
		return nil, err
	}
	return newMotions(outs[:len(reqs)]), nil
}

// PlanBatch plans agents[i] with commands[i] (1..64 distinct agents of this model) in one call;
// all or nothing.
func (m *Model) PlanBatch(agents []*Agent, commands []*Command) ([]*Motion, error) {
	if m.h == nil {
		return nil, ErrClosed
	}
	if len(agents) != len(commands) {
		return nil, &Error{StatusInvalidArgument, "PlanBatch needs one command per agent"}
	}
	ah := make([]*C.mb_agent, len(agents)+1)
	ch := make([]*C.mb_command, len(agents)+1)
	for i := range agents {
		if agents[i].h == nil || commands[i].h == nil {
			return nil, ErrClosed
		}
		if agents[i].model != m {
			return nil, &Error{StatusInvalidArgument, "PlanBatch: every agent must belong to this model"}
		}
		ah[i], ch[i] = agents[i].h, commands[i].h
	}
	outs := make([]*C.mb_motion, len(agents)+1)
	var b errBuf
	err := check(C.mb_agent_plan_batch(&ah[0], &ch[0], C.uint64_t(len(agents)), &outs[0], b.ptr(), b.cap()), &b)
	runtime.KeepAlive(agents)
	runtime.KeepAlive(commands)
	if err != nil {
		return nil, err
	}
	return newMotions(outs[:len(agents)]), nil
}
