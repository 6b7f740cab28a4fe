package itertest

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/shale-db/shale/internal/base"
)

// The notation of internal keys and entries in datadriven files:
//
//	ukey#seq,KIND          a key, as base.InternalKey.String prints it
//	ukey#seq,KIND:value    an entry; a deletion may leave out ":" and the
//	                       (empty) value
//
// ukey is plain, or double-quoted as base.FormatKey quotes it; KIND is one
// of the kinds' names (SET, DEL, RANGEDEL).

// ParseKey reads "ukey#seq,KIND".
func ParseKey(s string) (base.InternalKey, error) {
	ukey := ""
	if strings.HasPrefix(s, `"`) {
		q, err := strconv.QuotedPrefix(s)
		if err != nil {
			return base.InternalKey{}, fmt.Errorf("bad key %q: %v", s, err)
		}
		ukey, _ = strconv.Unquote(q)
		s = s[len(q):]
	} else {
		i := strings.IndexByte(s, '#')
		if i < 0 {
			return base.InternalKey{}, fmt.Errorf("bad key %q: want ukey#seq,KIND", s)
		}
		ukey, s = s[:i], s[i:]
	}
	seq, kind, ok := strings.Cut(strings.TrimPrefix(s, "#"), ",")
	n, err := strconv.ParseUint(seq, 10, 64)
	if !ok || err != nil || !strings.HasPrefix(s, "#") {
		return base.InternalKey{}, fmt.Errorf("bad key %q: want ukey#seq,KIND", s)
	}
	for _, k := range []base.Kind{base.KindSet, base.KindDelete, base.KindRangeDelete} {
		if k.String() == kind {
			return base.MakeInternalKey([]byte(ukey), base.SeqNum(n), k), nil
		}
	}
	return base.InternalKey{}, fmt.Errorf("bad kind in %q", s)
}

// ParseEntry reads "ukey#seq,KIND:value", or "ukey#seq,KIND" for an empty
// value.
func ParseEntry(s string) (base.InternalKey, []byte, error) {
	// The key's own quotes may hold a ':', so split after the kind.
	i := strings.IndexByte(s, ',')
	if strings.HasPrefix(s, `"`) {
		q, err := strconv.QuotedPrefix(s)
		if err != nil {
			return base.InternalKey{}, nil, fmt.Errorf("bad entry %q: %v", s, err)
		}
		i = len(q) + strings.IndexByte(s[len(q):], ',')
	}
	if i < 0 {
		return base.InternalKey{}, nil, fmt.Errorf("bad entry %q: want ukey#seq,KIND:value", s)
	}
	key, value, _ := strings.Cut(s[i:], ":")
	k, err := ParseKey(s[:i] + key)
	return k, []byte(value), err
}

// FormatEntry prints an entry as ParseEntry reads it: a deletion with no
// value as its key alone.
func FormatEntry(k base.InternalKey, v []byte) string {
	if k.Kind() == base.KindDelete && len(v) == 0 {
		return k.String()
	}
	return k.String() + ":" + string(v)
}

// ParseEntries reads entries separated by spaces or newlines.
func ParseEntries(s string) (keys []base.InternalKey, values [][]byte, err error) {
	for _, f := range strings.Fields(s) {
		k, v, err := ParseEntry(f)
		if err != nil {
			return nil, nil, err
		}
		keys, values = append(keys, k), append(values, v)
	}
	return keys, values, nil
}
