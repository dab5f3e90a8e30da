// Package motionbricks binds libmotionbricks (C ABI v1, include/motionbricks/*.h) through cgo.
//
// Names follow the reference runtime's Go binding where they make sense: Open, LoadModel,
// Skeleton, LoadStyle, NewAgent, Agent.Reset/SetContext/Plan/Advance, NewCommand and its setters,
// Model.PlanBatch, plus stateless Model.Infer. Every failing call returns an *Error carrying the
// mb_status and the library's message. Every object has Close (safe to call twice); finalizers
// free what was not closed, but only Close frees at a known time.
//
// Build: the headers are found relative to this package (../../include); the library with
// CGO_LDFLAGS="-L DIR -Wl,-rpath,DIR" (DIR holding libmotionbricks.so), or from the system path.
// Thread rules are the C ABI's (docs/API.md): distinct objects from distinct goroutines, a model
// shared by many; one object must not be changed while another goroutine uses it.
package motionbricks

// #cgo CFLAGS: -I${SRCDIR}/../../include
// #cgo LDFLAGS: -lmotionbricks
// #include <motionbricks/inference.h>
import "C"

import (
	"fmt"
	"unsafe"
)

// ABIVersion is the C ABI version this binding is written for.
const ABIVersion = 1

// Status is an mb_status.
type Status uint32

// The mb_status values.
const (
	StatusOK                 Status = 0
	StatusInvalidArgument    Status = 1
	StatusOutOfMemory        Status = 2
	StatusIOError            Status = 3
	StatusInvalidFormat      Status = 4
	StatusIncompatibleModel  Status = 5
	StatusBackendUnavailable Status = 6
	StatusComputeFailed      Status = 7
	StatusNotImplemented     Status = 8
	StatusInternalError      Status = 9
)

// String is the library's name of the status ("invalid argument", ...).
func (s Status) String() string {
	return C.GoString(C.mb_status_string(C.mb_status(s)))
}

// Error is a failed call: the status and the library's message.
type Error struct {
	Status  Status
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("motionbricks: %s: %s", e.Status, e.Message)
}

// Is makes errors.Is(err, &motionbricks.Error{Status: s}) match any error of status s.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Status == e.Status && (t.Message == "" || t.Message == e.Message)
}

// errBuf is the (error, capacity) pair of one call: Go memory without pointers, which cgo may pass.
type errBuf [1024]C.char

func (b *errBuf) ptr() *C.char    { return &b[0] }
func (b *errBuf) cap() C.uint64_t { return C.uint64_t(len(b)) }

func check(status C.mb_status, b *errBuf) error {
	if status == 0 {
		return nil
	}
	return &Error{Status: Status(status), Message: C.GoString(b.ptr())}
}

// Library is the linked libmotionbricks, checked by Open.
type Library struct{}

func checkABI(version uint32) error {
	if version != ABIVersion {
		return fmt.Errorf("motionbricks: the linked libmotionbricks has C ABI version %d; this binding needs version %d",
			version, ABIVersion)
	}
	return nil
}

// Open checks that the linked libmotionbricks speaks C ABI version 1 and returns it. (The
// reference's PureGo binding takes a library path here; cgo links the library at build time.)
func Open() (*Library, error) {
	if err := checkABI(uint32(C.mb_abi_version())); err != nil {
		return nil, err
	}
	return &Library{}, nil
}

// ABIVersion is mb_abi_version() of the linked library.
func (l *Library) ABIVersion() uint32 { return uint32(C.mb_abi_version()) }

func floatPtr(s []float32) *C.float {
	if len(s) == 0 {
		return nil
	}
	return (*C.float)(unsafe.Pointer(&s[0]))
}

func boolU32(b bool) C.uint32_t {
	if b {
		return 1
	}
	return 0
}
