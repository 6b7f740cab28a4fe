// Package bloom builds and probes Bloom filters.
package bloom
