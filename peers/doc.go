// Package peers compares shale with other embedded Go key-value stores
// (goleveldb, Pebble, Badger) through their public APIs. It is a separate module so
// that the shale library itself gains no dependency. The side-by-side runner
// is the command in cmd/dbbench; the rest lives in the _test.go files, as
// `go test -bench` benchmarks and, behind -ycsb, TestYCSB. See README.md.
package peers
