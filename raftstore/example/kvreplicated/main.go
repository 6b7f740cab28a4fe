// Command kvreplicated is a small replicated key-value server: hashicorp/raft
// replicates its commands, raftstore keeps raft's log and stable state in a
// shale DB, and the state machine is a second shale DB. It listens on
// loopback addresses only; see README.md for a three-process cluster.
//
// HTTP API (on -http):
//
//	GET    /kv/{key}   the value in this node's state (a follower may lag)
//	PUT    /kv/{key}   set key to the request body (leader only)
//	DELETE /kv/{key}   delete key (leader only)
//	GET    /status     this node's raft state, leader, applied index
//
// A node's directory (-dir) holds raft/ (the raftstore DB), state/ (the
// state machine DB), snapshots/ (raft's file snapshot store) and restore/
// (where a snapshot restore writes the table it ingests, removed after).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/shale-db/shale"
	"github.com/shale-db/shale/raftstore"
)

func main() {
	id := flag.String("id", "", "this node's id, one of the names in -peers")
	dir := flag.String("dir", "", "this node's data directory")
	httpAddr := flag.String("http", "", "loopback address of the HTTP API, e.g. 127.0.0.1:8001")
	peers := flag.String("peers", "", "every node as id=raft-address, comma-separated, e.g. n1=127.0.0.1:7001,n2=127.0.0.1:7002")
	flag.Parse()
	if err := run(*id, *dir, *httpAddr, *peers); err != nil {
		log.Fatalf("kvreplicated: %v", err)
	}
}

// parsePeers reads -peers, refusing any address that is not loopback.
func parsePeers(s string) ([]raft.Server, error) {
	var servers []raft.Server
	for _, p := range strings.Split(s, ",") {
		id, addr, ok := strings.Cut(p, "=")
		if !ok || id == "" {
			return nil, fmt.Errorf("-peers: %q is not id=address", p)
		}
		if err := checkLoopback(addr); err != nil {
			return nil, fmt.Errorf("-peers %s: %w", id, err)
		}
		servers = append(servers, raft.Server{ID: raft.ServerID(id), Address: raft.ServerAddress(addr)})
	}
	return servers, nil
}

// checkLoopback accepts host:port with a loopback IP host: this example is
// for one machine and has no authentication.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%s is not a loopback address (this example listens on 127.0.0.1 only)", addr)
	}
	return nil
}

func run(id, dir, httpAddr, peerList string) error {
	if id == "" || dir == "" || httpAddr == "" || peerList == "" {
		return errors.New("-id, -dir, -http and -peers are all required")
	}
	servers, err := parsePeers(peerList)
	if err != nil {
		return err
	}
	if err := checkLoopback(httpAddr); err != nil {
		return fmt.Errorf("-http: %w", err)
	}
	var self *raft.Server
	for i := range servers {
		if servers[i].ID == raft.ServerID(id) {
			self = &servers[i]
		}
	}
	if self == nil {
		return fmt.Errorf("-id %s is not in -peers", id)
	}

	store, err := raftstore.Open(filepath.Join(dir, "raft"), nil)
	if err != nil {
		return err
	}
	defer store.Close()
	stateDB, err := shale.Open(filepath.Join(dir, "state"), nil)
	if err != nil {
		return err
	}
	defer stateDB.Close()
	sm, err := newFSM(stateDB, filepath.Join(dir, "restore"))
	if err != nil {
		return err
	}
	snaps, err := raft.NewFileSnapshotStore(dir, 2, os.Stderr)
	if err != nil {
		return err
	}
	trans, err := raft.NewTCPTransport(string(self.Address), nil, 3, 10*time.Second, os.Stderr)
	if err != nil {
		return err
	}

	conf := raft.DefaultConfig()
	conf.LocalID = self.ID
	conf.Logger = hclog.New(&hclog.LoggerOptions{Name: id, Level: hclog.Info})
	conf.SnapshotThreshold = 1024
	// The state DB keeps what it applied, so raft need not rebuild it from
	// the newest snapshot on start, unless the state is behind that
	// snapshot (a new or lost state directory).
	list, err := snaps.List()
	if err != nil {
		return err
	}
	conf.NoSnapshotRestoreOnStart = len(list) == 0 || sm.Applied() >= list[0].Index

	existing, err := raft.HasExistingState(store, store, snaps)
	if err != nil {
		return err
	}
	if !existing {
		// Every node bootstraps with the same configuration; raft accepts that.
		if err := raft.BootstrapCluster(conf, store, store, snaps, trans, raft.Configuration{Servers: servers}); err != nil {
			return err
		}
	}
	r, err := raft.NewRaft(conf, sm, store, store, snaps, trans)
	if err != nil {
		return err
	}
	defer func() {
		if err := r.Shutdown().Error(); err != nil {
			log.Printf("kvreplicated %s: raft shutdown: %v", id, err)
		}
	}()

	srv := &http.Server{Addr: httpAddr, Handler: handler(r, sm)}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Printf("kvreplicated %s: raft on %s, HTTP on %s, data in %s", id, self.Address, httpAddr, dir)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	select {
	case s := <-sig:
		log.Printf("kvreplicated %s: %v, shutting down", id, s)
		return srv.Close()
	case err := <-errc:
		return err
	}
}

// handler serves the HTTP API of the package comment.
func handler(r *raft.Raft, sm *fsm) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /kv/{key}", func(w http.ResponseWriter, req *http.Request) {
		v, err := sm.Get([]byte(req.PathValue("key")))
		switch {
		case errors.Is(err, shale.ErrNotFound):
			http.Error(w, "not found", http.StatusNotFound)
		case err != nil:
			http.Error(w, err.Error(), http.StatusInternalServerError)
		default:
			w.Write(v)
		}
	})
	write := func(w http.ResponseWriter, req *http.Request, value []byte) {
		f := r.Apply(encodeCommand([]byte(req.PathValue("key")), value), 10*time.Second)
		err := f.Error()
		if err == nil {
			if e, ok := f.Response().(error); ok {
				err = e
			}
		}
		switch {
		case errors.Is(err, raft.ErrNotLeader):
			_, leader := r.LeaderWithID()
			http.Error(w, fmt.Sprintf("not the leader; the leader is %q", leader), http.StatusMisdirectedRequest)
		case err != nil:
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		default:
			fmt.Fprintf(w, "ok, index %d\n", f.Index())
		}
	}
	mux.HandleFunc("PUT /kv/{key}", func(w http.ResponseWriter, req *http.Request) {
		v, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		write(w, req, append([]byte{}, v...)) // a put has a non-nil value, even empty
	})
	mux.HandleFunc("DELETE /kv/{key}", func(w http.ResponseWriter, req *http.Request) {
		write(w, req, nil)
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, req *http.Request) {
		_, leader := r.LeaderWithID()
		fmt.Fprintf(w, "state %s, leader %q, term %s, state machine at index %d, last log index %d\n",
			r.State(), leader, r.Stats()["term"], sm.Applied(), r.LastIndex())
	})
	return mux
}
