package motionbricks

// #include <motionbricks/inference.h>
import "C"

import "runtime"

// Field selects a feature field of a request.
type Field uint32

// The MB_INFERENCE_* field selectors.
const (
	FieldGlobalRoot Field = 0 // 8 x 5 floats: x, height, z, cos(yaw), sin(yaw)
	FieldLocalRoot  Field = 1 // 8 x 4 floats: yaw velocity, x velocity, z velocity, height
	FieldPose       Field = 2 // 8 x 303 floats
	FieldDurations  Field = 3 // mask only: 11 choices, index i allows 24 + 4i frames
)

// Request is a stateless inference request (inference.h).
type Request struct{ h *C.mb_inference_request }

// NewRequest makes an empty request with the defaults.
func (l *Library) NewRequest() (*Request, error) {
	var b errBuf
	r := &Request{}
	if err := check(C.mb_inference_request_create(&r.h, b.ptr(), b.cap()), &b); err != nil {
		return nil, err
	}
	runtime.SetFinalizer(r, (*Request).Close)
	return r, nil
}

// Close frees the request (motions inferred from it stay valid).
func (r *Request) Close() error {
	if r.h != nil {
		C.mb_inference_request_free(r.h)
		r.h = nil
		runtime.SetFinalizer(r, nil)
	}
	return nil
}

func (r *Request) call(f func(*errBuf) C.mb_status) error {
	if r.h == nil {
		return ErrClosed
	}
	var b errBuf
	err := check(f(&b), &b)
	runtime.KeepAlive(r)
	return err
}

// SetFeatures copies a feature field (40, 32 or 2424 floats) for both boundaries.
func (r *Request) SetFeatures(f Field, data []float32) error {
	return r.call(func(b *errBuf) C.mb_status {
		return C.mb_inference_request_set_features(r.h, C.uint32_t(f), floatPtr(data), C.uint64_t(len(data)), b.ptr(), b.cap())
	})
}

// SetMask copies a 0/1 mask: 8 slots of a feature field, or 11 durations.
func (r *Request) SetMask(f Field, mask []bool) error {
	m := make([]C.uint32_t, len(mask)+1)
	for i, v := range mask {
		m[i] = boolU32(v)
	}
	return r.call(func(b *errBuf) C.mb_status {
		return C.mb_inference_request_set_mask(r.h, C.uint32_t(f), &m[0], C.uint64_t(len(mask)), b.ptr(), b.cap())
	})
}

// SetBoundaryPoses encodes 4 poses (roots [12], local x y z w [544]) as boundary 0 (source) or 1 (target).
func (r *Request) SetBoundaryPoses(m *Model, boundary uint32, roots, localXYZW []float32) error {
	if m.h == nil {
		return ErrClosed
	}
	err := r.call(func(b *errBuf) C.mb_status {
		return C.mb_inference_request_set_boundary_poses(r.h, m.h, C.uint32_t(boundary), floatPtr(roots),
			C.uint64_t(len(roots)), floatPtr(localXYZW), C.uint64_t(len(localXYZW)), b.ptr(), b.cap())
	})
	runtime.KeepAlive(m)
	return err
}

// SetSeed sets the Gumbel generator's seed.
func (r *Request) SetSeed(seed uint64) error {
	return r.call(func(b *errBuf) C.mb_status {
		return C.mb_inference_request_set_seed(r.h, C.uint64_t(seed), b.ptr(), b.cap())
	})
}

// SetSamplingArgmax selects argmax pose tokens (false: Gumbel).
func (r *Request) SetSamplingArgmax(enabled bool) error {
	return r.call(func(b *errBuf) C.mb_status {
		return C.mb_inference_request_set_sampling_argmax(r.h, boolU32(enabled), b.ptr(), b.cap())
	})
}

// SetTokenCount forces the duration (6..16 tokens; 0 predicts it).
func (r *Request) SetTokenCount(n uint32) error {
	return r.call(func(b *errBuf) C.mb_status {
		return C.mb_inference_request_set_token_count(r.h, C.uint32_t(n), b.ptr(), b.cap())
	})
}

// SetInferenceSteps sets the masked-decoding steps (1..16).
func (r *Request) SetInferenceSteps(n uint32) error {
	return r.call(func(b *errBuf) C.mb_status {
		return C.mb_inference_request_set_inference_steps(r.h, C.uint32_t(n), b.ptr(), b.cap())
	})
}

// SetGumbelUniforms supplies the Gumbel noise [steps*16*8*10] (empty clears it).
func (r *Request) SetGumbelUniforms(u []float32) error {
	return r.call(func(b *errBuf) C.mb_status {
		return C.mb_inference_request_set_gumbel_uniforms(r.h, floatPtr(u), C.uint64_t(len(u)), b.ptr(), b.cap())
	})
}

// SetSkipEndingTargetCond is upstream's skip_ending_target_cond.
func (r *Request) SetSkipEndingTargetCond(enabled bool) error {
	return r.call(func(b *errBuf) C.mb_status {
		return C.mb_inference_request_set_skip_ending_target_cond(r.h, boolU32(enabled), b.ptr(), b.cap())
	})
}

// SetAllowOutOfReach is upstream's allow_pred_out_of_reach_num_tokens.
func (r *Request) SetAllowOutOfReach(enabled bool) error {
	return r.call(func(b *errBuf) C.mb_status {
		return C.mb_inference_request_set_allow_out_of_reach(r.h, boolU32(enabled), b.ptr(), b.cap())
	})
}
