package ycsb

import (
	"errors"

	"github.com/shale-db/shale"
)

// Shale returns a Store that runs the workloads on db: Get, Put, and scans
// with one iterator each.
func Shale(db *shale.DB) Store { return shaleStore{db} }

type shaleStore struct{ db *shale.DB }

func (s shaleStore) Get(key []byte) ([]byte, bool, error) {
	v, err := s.db.Get(key)
	if errors.Is(err, shale.ErrNotFound) {
		return nil, false, nil
	}
	return v, err == nil, err
}

func (s shaleStore) Put(key, value []byte) error { return s.db.Put(key, value) }

func (s shaleStore) Scan(start []byte, n int, visit func(key, value []byte) error) error {
	it := s.db.NewIter(nil)
	for ok := it.SeekGE(start); ok && n > 0; ok, n = it.Next(), n-1 {
		if err := visit(it.Key(), it.Value()); err != nil {
			it.Close()
			return err
		}
	}
	return it.Close()
}
