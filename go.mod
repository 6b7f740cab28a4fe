module github.com/shale-db/shale

go 1.26

require github.com/cespare/xxhash/v2 v2.3.0
