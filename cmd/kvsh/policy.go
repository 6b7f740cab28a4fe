package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/shale-db/shale"
)

// namedPolicy is a filter policy that the policy command set, with the words
// that describe it, for stats and bloom to print.
type namedPolicy struct {
	shale.FilterPolicy
	desc string
}

// describeFilters says which filters new tables get under opts.
func describeFilters(opts shale.Options) string {
	if p, ok := opts.FilterPolicy.(namedPolicy); ok {
		return p.desc
	}
	return describeBloom(opts.BloomBitsPerKey)
}

// maxFilterBits bounds the bits per key the policy command takes (Ribbon
// filters take at most 32).
const maxFilterBits = 32

const policyUsage = "usage: policy [bloom BITS | ribbon BITS | fuse | monkey BITS | levels L0=F ... L6=F | off], F one of bloom:BITS, ribbon:BITS, fuse, none"

func cmdPolicy(sh *shell, args []string, opts map[string]string) error {
	if len(args) == 0 {
		if len(opts) > 0 {
			return errors.New(policyUsage)
		}
		fmt.Fprintf(sh.out, "new tables get %s\n", describeFilters(sh.opts))
		return nil
	}
	if args[0] != "levels" && len(opts) > 0 {
		return errors.New(policyUsage)
	}
	var p namedPolicy
	switch args[0] {
	case "bloom", "ribbon":
		if len(args) != 2 {
			return errors.New(policyUsage)
		}
		f, desc, err := parseTableFilter(args[0] + ":" + args[1])
		if err != nil {
			return err
		}
		p = namedPolicy{shale.UniformFilter(f), desc}
	case "monkey":
		if len(args) != 2 {
			return errors.New(policyUsage)
		}
		bits, err := parseInt("BITS", args[1], 1)
		if err != nil || bits > maxFilterBits {
			return fmt.Errorf("monkey: want bits per key from 1 to %d, not %s", maxFilterBits, shale.FormatKey([]byte(args[1])))
		}
		p = namedPolicy{shale.MonkeyBloom(bits), fmt.Sprintf("Bloom filters at %d bits/key on average over the tree, more for small runs and fewer for large ones (Monkey)", bits)}
	case "fuse", "off":
		if len(args) != 1 {
			return errors.New(policyUsage)
		}
		name := args[0]
		if name == "off" {
			name = "none"
		}
		f, desc, _ := parseTableFilter(name)
		p = namedPolicy{shale.UniformFilter(f), desc}
	case "levels":
		if len(args) != 1 || len(opts) == 0 {
			return errors.New(policyUsage)
		}
		var byLevel [shale.NumLevels]shale.TableFilter
		var descs [shale.NumLevels]string
		for level := range shale.NumLevels {
			spec, ok := opts[fmt.Sprintf("L%d", level)]
			if !ok {
				spec = "none"
			}
			f, desc, err := parseTableFilter(spec)
			if err != nil {
				return fmt.Errorf("L%d: %w", level, err)
			}
			byLevel[level], descs[level] = f, desc
		}
		p = namedPolicy{shale.PerLevelFilters(byLevel), "per level: " + describeLevels(descs)}
	default:
		return errors.New(policyUsage)
	}
	o := sh.opts
	o.FilterPolicy = p
	if err := sh.reopen(o); err != nil {
		return err
	}
	fmt.Fprintf(sh.out, "closed and reopened %s: tables written from now on (flushes, compactions) get %s; existing tables keep theirs\n",
		sh.dir, p.desc)
	return nil
}

// parseTableFilter reads one table filter: bloom:BITS, ribbon:BITS, fuse or
// none.
func parseTableFilter(spec string) (shale.TableFilter, string, error) {
	name, arg, hasArg := strings.Cut(spec, ":")
	switch name {
	case "fuse", "none":
		if hasArg {
			break
		}
		if name == "none" {
			return nil, "no filter", nil
		}
		return shale.FuseFilter(), "binary fuse filters (8-bit fingerprints)", nil
	case "bloom", "ribbon":
		bits, err := strconv.Atoi(arg)
		if !hasArg || err != nil || bits < 1 || bits > maxFilterBits {
			return nil, "", fmt.Errorf("%s: want bits per key from 1 to %d, not %s", name, maxFilterBits, shale.FormatKey([]byte(arg)))
		}
		if name == "ribbon" {
			return shale.RibbonFilter(float64(bits)), fmt.Sprintf("Ribbon filters at %d bits/key", bits), nil
		}
		return shale.BloomFilter(bits), describeBloom(bits), nil
	}
	return nil, "", fmt.Errorf("unknown filter %s (bloom:BITS, ribbon:BITS, fuse or none)", shale.FormatKey([]byte(spec)))
}

// describeLevels joins the levels' filters, naming a run of levels with the
// same filter once: "L0 Bloom filters at 15 bits/key, L1-L5 no filter, ...".
func describeLevels(descs [shale.NumLevels]string) string {
	var parts []string
	for first := 0; first < len(descs); {
		last := first
		for last+1 < len(descs) && descs[last+1] == descs[first] {
			last++
		}
		levels := fmt.Sprintf("L%d", first)
		if last > first {
			levels += fmt.Sprintf("-L%d", last)
		}
		parts = append(parts, levels+" "+descs[first])
		first = last + 1
	}
	return strings.Join(parts, ", ")
}
