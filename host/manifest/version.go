package manifest

import (
	"errors"
	"fmt"
	"strings"
)

// ValidVersion checks that v is a Semantic Versioning 2.0.0 version
// (MAJOR.MINOR.PATCH, optional -prerelease and +build; no leading 'v').
func ValidVersion(v string) error {
	_, err := parseVersion(v)
	return err
}

// CompareVersions compares two SemVer versions by precedence (build
// metadata ignored): -1 if a < b, 0 if equal, +1 if a > b. An invalid
// version sorts before every valid one; two invalid ones compare as
// strings.
func CompareVersions(a, b string) int {
	va, ea := parseVersion(a)
	vb, eb := parseVersion(b)
	switch {
	case ea != nil && eb != nil:
		return strings.Compare(a, b)
	case ea != nil:
		return -1
	case eb != nil:
		return 1
	}
	for i := range 3 {
		if c := compareNumeric(va.core[i], vb.core[i]); c != 0 {
			return c
		}
	}
	// a version without pre-release has higher precedence
	switch {
	case len(va.pre) == 0 && len(vb.pre) == 0:
		return 0
	case len(va.pre) == 0:
		return 1
	case len(vb.pre) == 0:
		return -1
	}
	for i := 0; i < len(va.pre) && i < len(vb.pre); i++ {
		x, y := va.pre[i], vb.pre[i]
		xn, yn := isDigits(x), isDigits(y)
		var c int
		switch {
		case xn && yn:
			c = compareNumeric(x, y)
		case xn:
			c = -1
		case yn:
			c = 1
		default:
			c = strings.Compare(x, y)
		}
		if c != 0 {
			return c
		}
	}
	return compareInt(len(va.pre), len(vb.pre))
}

type version struct {
	core [3]string
	pre  []string
}

func parseVersion(v string) (version, error) {
	var out version
	if v == "" {
		return out, errors.New("version is empty")
	}
	if len(v) > 128 {
		return out, errors.New("version is longer than 128 bytes")
	}
	rest, build, hasBuild := strings.Cut(v, "+")
	if hasBuild {
		for _, id := range strings.Split(build, ".") {
			if id == "" || !isAlnumHyphen(id) {
				return out, fmt.Errorf("version %q: invalid build metadata", v)
			}
		}
	}
	core, pre, hasPre := strings.Cut(rest, "-")
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return out, fmt.Errorf("version %q: want MAJOR.MINOR.PATCH (SemVer), for example 1.0.0", v)
	}
	for i, p := range parts {
		if !isDigits(p) || (len(p) > 1 && p[0] == '0') {
			return out, fmt.Errorf("version %q: %q is not a number without leading zeros", v, p)
		}
		out.core[i] = p
	}
	if hasPre {
		for _, id := range strings.Split(pre, ".") {
			if id == "" || !isAlnumHyphen(id) || (isDigits(id) && len(id) > 1 && id[0] == '0') {
				return out, fmt.Errorf("version %q: invalid pre-release identifier %q", v, id)
			}
			out.pre = append(out.pre, id)
		}
	}
	return out, nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isAlnumHyphen(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-') {
			return false
		}
	}
	return true
}

// compareNumeric compares digit strings without leading zeros, of any
// length.
func compareNumeric(a, b string) int {
	if c := compareInt(len(a), len(b)); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

func compareInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
