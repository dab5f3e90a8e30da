package motionbricks

import (
	"archive/zip"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// npyArray is one array of an .npz fixture, widened to float64.
type npyArray struct {
	shape []int
	data  []float64
}

var npyHeader = regexp.MustCompile(`'descr':\s*'([^']+)'.*'fortran_order':\s*False.*'shape':\s*\(([^)]*)\)`)

// readNpz reads the little-endian numeric arrays of an .npz (f4, f8, i4, i8, b1).
func readNpz(path string) (map[string]npyArray, error) {
	z, err := zip.OpenReader(path)
	if err != nil {
		return nil, err
	}
	defer z.Close()
	out := map[string]npyArray{}
	for _, f := range z.File {
		r, err := f.Open()
		if err != nil {
			return nil, err
		}
		raw, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			return nil, err
		}
		if len(raw) < 10 || string(raw[1:6]) != "NUMPY" {
			return nil, fmt.Errorf("%s: %s is not .npy", path, f.Name)
		}
		var hlen, start int
		if raw[6] == 1 {
			hlen, start = int(binary.LittleEndian.Uint16(raw[8:10])), 10
		} else {
			hlen, start = int(binary.LittleEndian.Uint32(raw[8:12])), 12
		}
		m := npyHeader.FindStringSubmatch(string(raw[start : start+hlen]))
		if m == nil {
			continue // strings and other kinds are not needed
		}
		a := npyArray{}
		n := 1
		for _, s := range strings.Split(m[2], ",") {
			if s = strings.TrimSpace(s); s != "" {
				d, _ := strconv.Atoi(s)
				a.shape = append(a.shape, d)
				n *= d
			}
		}
		body := raw[start+hlen:]
		a.data = make([]float64, n)
		for i := range a.data {
			switch m[1] {
			case "<f4":
				a.data[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(body[4*i:])))
			case "<f8":
				a.data[i] = math.Float64frombits(binary.LittleEndian.Uint64(body[8*i:]))
			case "<i4":
				a.data[i] = float64(int32(binary.LittleEndian.Uint32(body[4*i:])))
			case "<i8":
				a.data[i] = float64(int64(binary.LittleEndian.Uint64(body[8*i:])))
			case "|b1":
				a.data[i] = float64(body[i])
			default:
				return nil, fmt.Errorf("%s: %s has dtype %s", path, f.Name, m[1])
			}
		}
		out[strings.TrimSuffix(f.Name, ".npy")] = a
	}
	return out, nil
}

func (a npyArray) f32() []float32 {
	out := make([]float32, len(a.data))
	for i, v := range a.data {
		out[i] = float32(v)
	}
	return out
}

func (a npyArray) bools() []bool {
	out := make([]bool, len(a.data))
	for i, v := range a.data {
		out[i] = v != 0
	}
	return out
}
