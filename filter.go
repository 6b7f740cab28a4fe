package shale

import (
	"github.com/shale-db/shale/bloom"
	"github.com/shale-db/shale/internal/base"
)

// uniformBloom is the default filter policy: the same Bloom filter at every
// level, or none for NoFilter.
type uniformBloom int

func (u uniformBloom) FilterForLevel(int) base.FilterPolicy {
	if int(u) <= 0 {
		return nil
	}
	return bloom.NewPolicy(int(u))
}
