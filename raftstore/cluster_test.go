package raftstore

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/shale-db/shale"
	"github.com/shale-db/shale/vfs"
)

// waitLimit bounds every wait of these tests: it is a deadline against a
// hang, not a speed requirement.
const waitLimit = 30 * time.Second

// kvFSM is the state machine of the cluster tests: commands "key=value"
// set a key.
type kvFSM struct {
	mu sync.Mutex
	kv map[string]string
}

func newKVFSM() *kvFSM { return &kvFSM{kv: map[string]string{}} }

func (f *kvFSM) Apply(l *raft.Log) any {
	k, v, ok := strings.Cut(string(l.Data), "=")
	if !ok {
		return fmt.Errorf("command %q is not key=value", l.Data)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.kv[k] = v
	return nil
}

func (f *kvFSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := make(map[string]string, len(f.kv))
	for k, v := range f.kv {
		c[k] = v
	}
	return kvSnapshot(c), nil
}

func (f *kvFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	kv := map[string]string{}
	if err := json.NewDecoder(rc).Decode(&kv); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.kv = kv
	return nil
}

func (f *kvFSM) state() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := make(map[string]string, len(f.kv))
	for k, v := range f.kv {
		c[k] = v
	}
	return c
}

type kvSnapshot map[string]string

func (s kvSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := json.NewEncoder(sink).Encode(map[string]string(s)); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (kvSnapshot) Release() {}

func testConfig(t *testing.T, id raft.ServerID) *raft.Config {
	c := raft.DefaultConfig()
	c.LocalID = id
	// Long enough that a busy machine under -race does not see a leader
	// miss its heartbeats, short enough that a failover takes a second.
	c.HeartbeatTimeout = 400 * time.Millisecond
	c.ElectionTimeout = 400 * time.Millisecond
	c.LeaderLeaseTimeout = 200 * time.Millisecond
	c.CommitTimeout = 5 * time.Millisecond
	// Snapshot often and keep a short log, so that compaction (DeleteRange)
	// runs many times and restarted nodes catch up from snapshots.
	c.SnapshotThreshold = 300
	c.SnapshotInterval = 50 * time.Millisecond
	c.TrailingLogs = 100
	c.Logger = hclog.New(&hclog.LoggerOptions{Name: string(id), Level: hclog.Error, Output: testWriter{t}})
	return c
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// node is one member of a test cluster. Its shale store lives in dir on
// the OS file system, or on fs when fs is not nil (a node the test can
// crash); its snapshots live in dir/snapshots either way.
type node struct {
	id    raft.ServerID
	dir   string
	fs    *vfs.MemFS
	store *Store
	snaps *raft.FileSnapshotStore
	fsm   *kvFSM
	trans *raft.InmemTransport
	raft  *raft.Raft
}

type cluster struct {
	t     *testing.T
	nodes []*node
	// compared counts the log entries converge found equal on every node
	// (it finds none when every node just took a snapshot at the end).
	compared int
}

// newCluster returns an empty cluster whose running nodes are shut down
// when the test ends, so that none logs to a finished test.
func newCluster(t *testing.T) *cluster {
	c := &cluster{t: t}
	t.Cleanup(func() {
		for _, n := range c.running() {
			n.raft.Shutdown().Error()
			n.store.Close()
		}
	})
	return c
}

func (c *cluster) addr(n *node) raft.ServerAddress { return raft.ServerAddress(n.id) }

// start opens n's store and snapshot store, connects a new transport to the
// running nodes, and starts raft. A fresh cluster is bootstrapped by its
// first node.
func (c *cluster) start(n *node, bootstrap bool) {
	t := c.t
	t.Helper()
	var opts *shale.Options
	storeDir := filepath.Join(n.dir, "raft")
	if n.fs != nil {
		opts = &shale.Options{FS: n.fs, NoSync: true}
		storeDir = "raft"
	}
	var err error
	if n.store, err = Open(storeDir, opts); err != nil {
		t.Fatalf("%s: %v", n.id, err)
	}
	if n.snaps, err = raft.NewFileSnapshotStore(n.dir, 2, io.Discard); err != nil {
		t.Fatal(err)
	}
	n.fsm = newKVFSM()
	_, n.trans = raft.NewInmemTransport(c.addr(n))
	for _, o := range c.nodes {
		if o != n && o.raft != nil {
			n.trans.Connect(c.addr(o), o.trans)
			o.trans.Connect(c.addr(n), n.trans)
		}
	}
	conf := testConfig(t, n.id)
	if bootstrap {
		var servers []raft.Server
		for _, o := range c.nodes {
			servers = append(servers, raft.Server{ID: o.id, Address: c.addr(o)})
		}
		if err := raft.BootstrapCluster(conf, n.store, n.store, n.snaps, n.trans, raft.Configuration{Servers: servers}); err != nil {
			t.Fatal(err)
		}
	}
	if n.raft, err = raft.NewRaft(conf, n.fsm, n.store, n.store, n.snaps, n.trans); err != nil {
		t.Fatalf("%s: %v", n.id, err)
	}
}

// stop shuts n down cleanly and closes its store.
func (c *cluster) stop(n *node) {
	c.t.Helper()
	c.isolate(n)
	if err := n.raft.Shutdown().Error(); err != nil {
		c.t.Fatal(err)
	}
	if err := n.store.Close(); err != nil {
		c.t.Fatal(err)
	}
	n.raft = nil
}

// crash makes n lose power: it is cut off from its peers, its file system
// becomes what a power loss would leave, and its raft and store are
// abandoned (shut down so their goroutines end, on the old file system).
func (c *cluster) crash(n *node) {
	c.t.Helper()
	c.isolate(n)
	image := n.fs.CrashClone()
	n.raft.Shutdown().Error()
	n.store.Close()
	n.fs, n.raft = image, nil
}

// isolate cuts n from every other node, both ways, so nothing n does from
// now on reaches them.
func (c *cluster) isolate(n *node) {
	n.trans.DisconnectAll()
	for _, o := range c.nodes {
		if o != n && o.raft != nil {
			o.trans.Disconnect(c.addr(n))
		}
	}
}

func (c *cluster) running() []*node {
	var r []*node
	for _, n := range c.nodes {
		if n.raft != nil {
			r = append(r, n)
		}
	}
	return r
}

// waitFor polls cond until it returns nil, failing the test with its last
// answer after waitLimit.
func waitFor(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still waiting after %v for %s: %v", waitLimit, what, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// leader waits until the running nodes agree on a leader among them and
// returns it.
func (c *cluster) leader() *node {
	c.t.Helper()
	var l *node
	waitFor(c.t, "a leader every running node follows", func() (err error) {
		l, err = c.agreedLeader()
		return err
	})
	return l
}

// agreedLeader returns the running leader that every running node follows,
// or says why there is none.
func (c *cluster) agreedLeader() (*node, error) {
	var l *node
	for _, n := range c.running() {
		if n.raft.State() == raft.Leader {
			l = n
		}
	}
	if l == nil {
		return nil, fmt.Errorf("no running node leads")
	}
	for _, n := range c.running() {
		if _, id := n.raft.LeaderWithID(); id != l.id {
			return nil, fmt.Errorf("%s follows %q, not %s", n.id, id, l.id)
		}
	}
	return l, nil
}

// apply sets keys key<from> to key<to-1>, each to "v<i>", through the
// leader, 100 commands in flight at a time. A batch that fails because
// leadership moved is sent again to the new leader: the commands are
// idempotent.
func (c *cluster) apply(from, to int) {
	c.t.Helper()
	for lo := from; lo < to; lo += 100 {
		hi := min(lo+100, to)
		var err error
		for attempt := 0; attempt < 5; attempt++ {
			l := c.leader()
			var fs []raft.ApplyFuture
			for i := lo; i < hi; i++ {
				fs = append(fs, l.raft.Apply([]byte(fmt.Sprintf("key%d=v%d", i, i)), waitLimit))
			}
			err = nil
			for _, f := range fs {
				if e := f.Error(); e != nil && err == nil {
					err = e
				}
			}
			if err == nil {
				break
			}
		}
		if err != nil {
			c.t.Fatalf("applying commands %d to %d: %v", lo, hi-1, err)
		}
	}
}

// converge waits until every running node has applied the leader's whole
// log and agrees with it: the leader's state machine holds keys 0 to n-1,
// every node's state machine equals it, and the logs hold the same entries
// where they overlap. It waits, rather than checks once, because an
// election may append an entry while it looks; real disagreement fails
// the test after waitLimit with the last difference found.
func (c *cluster) converge(n int) {
	c.t.Helper()
	waitFor(c.t, "every node to agree with the leader", func() error {
		compared, err := c.agree(n)
		c.compared += compared
		return err
	})
}

// agree is one look of converge; it returns how many log entries it found
// equal on every node.
func (c *cluster) agree(n int) (int, error) {
	l, err := c.agreedLeader()
	if err != nil {
		return 0, err
	}
	last := l.raft.LastIndex()
	for _, m := range c.running() {
		if a := m.raft.AppliedIndex(); a < last {
			return 0, fmt.Errorf("%s applied %d of the leader's %d entries", m.id, a, last)
		}
	}
	want := l.fsm.state()
	if len(want) != n {
		return 0, fmt.Errorf("leader %s holds %d keys, want %d", l.id, len(want), n)
	}
	for i := 0; i < n; i++ {
		if v := want[fmt.Sprintf("key%d", i)]; v != fmt.Sprintf("v%d", i) {
			return 0, fmt.Errorf("leader %s: key%d = %q", l.id, i, v)
		}
	}
	// A log may have a gap below a snapshot the node installed (raft keeps
	// trailing entries it had), so entries are compared from above every
	// node's newest snapshot on.
	from, err := c.logStart(l)
	if err != nil {
		return 0, err
	}
	for _, m := range c.running() {
		if got := m.fsm.state(); fmt.Sprint(got) != fmt.Sprint(want) {
			return 0, fmt.Errorf("%s's state machine (%d keys) differs from leader %s's (%d keys)", m.id, len(got), l.id, len(want))
		}
		mLast, err := m.store.LastIndex()
		if err != nil {
			return 0, err
		}
		// A log whose end lies below the node's newest snapshot is one that
		// installed a snapshot covering the leader's whole log.
		start, err := c.logStart(m)
		if err != nil {
			return 0, err
		}
		if mLast != last && mLast >= start {
			return 0, fmt.Errorf("%s's log ends at %d (newest snapshot at %d), the leader's at %d", m.id, mLast, start-1, last)
		}
		from = max(from, start)
	}
	compared := 0
	for i := from; i <= last; i++ {
		var want raft.Log
		if err := l.store.GetLog(i, &want); err != nil {
			return 0, fmt.Errorf("leader %s GetLog(%d): %w", l.id, i, err)
		}
		for _, m := range c.running() {
			var got raft.Log
			if err := m.store.GetLog(i, &got); err != nil {
				return 0, fmt.Errorf("%s GetLog(%d): %w", m.id, i, err)
			}
			if got.Term != want.Term || got.Type != want.Type || string(got.Data) != string(want.Data) {
				return 0, fmt.Errorf("%s's entry %d differs from the leader's", m.id, i)
			}
		}
		compared++
	}
	if l.raft.LastIndex() != last || l.raft.State() != raft.Leader {
		return 0, fmt.Errorf("leader %s moved on while compared", l.id)
	}
	return compared, nil
}

// logStart returns the index from which n's log must be contiguous: past
// its first entry and past its newest snapshot.
func (c *cluster) logStart(n *node) (uint64, error) {
	first, err := n.store.FirstIndex()
	if err != nil {
		return 0, err
	}
	snaps, err := n.snaps.List()
	if err != nil {
		return 0, err
	}
	if len(snaps) > 0 {
		first = max(first, snaps[0].Index+1)
	}
	return first, nil
}

// TestCluster runs three raft nodes on shale stores in one process: it
// stops the leader and restarts it from its directory, then crashes a
// leader whose store is on a MemFS and restarts it from the crash image,
// applying commands throughout, and checks that logs and state machines
// converge and that snapshots compacted every log.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("a three-node cluster")
	}
	root := t.TempDir()
	c := newCluster(t)
	for _, id := range []raft.ServerID{"n1", "n2", "n3"} {
		n := &node{id: id, dir: filepath.Join(root, string(id))}
		if id == "n3" {
			n.fs = vfs.NewMem()
		}
		c.nodes = append(c.nodes, n)
	}
	for i, n := range c.nodes {
		c.start(n, i == 0)
	}

	const phase = 1500
	applied := 0
	c.apply(applied, applied+phase)
	applied += phase
	c.converge(applied)

	// A clean stop of the leader, commands while it is away, a restart from
	// its directory.
	old := c.leader()
	c.stop(old)
	began := time.Now()
	c.leader()
	failoverTimes := []time.Duration{time.Since(began).Round(time.Millisecond)}
	c.apply(applied, applied+phase) // through the new leader
	applied += phase
	began = time.Now()
	c.start(old, false)
	c.converge(applied)
	stopRecovery := time.Since(began)

	// A power loss of n3 while it leads, commands while it is away, a
	// restart from what its file system kept.
	n3 := c.nodes[2]
	for attempt := 0; c.leader() != n3; attempt++ {
		if attempt == 3 {
			t.Fatal("leadership did not move to n3 in 3 transfers")
		}
		if err := c.leader().raft.LeadershipTransferToServer(n3.id, c.addr(n3)).Error(); err != nil {
			t.Logf("leadership transfer to n3: %v", err)
		}
	}
	c.apply(applied, applied+phase/3)
	applied += phase / 3
	c.crash(n3)
	began = time.Now()
	c.leader()
	failoverTimes = append(failoverTimes, time.Since(began).Round(time.Millisecond))
	c.apply(applied, applied+phase) // through the new leader
	applied += phase
	began = time.Now()
	c.start(n3, false)
	c.converge(applied)
	crashRecovery := time.Since(began)
	// converge compares the log entries above every node's newest snapshot.
	// On a fast machine a snapshot may have covered the whole log at every
	// look so far; a few more commands, far fewer than SnapshotThreshold,
	// leave entries above it to compare.
	for round := 0; c.compared == 0 && round < 5; round++ {
		c.apply(applied, applied+10)
		applied += 10
		c.converge(applied)
	}

	for _, n := range c.nodes {
		snaps, err := n.snaps.List()
		if err != nil {
			t.Fatal(err)
		}
		first, err := n.store.FirstIndex()
		if err != nil {
			t.Fatal(err)
		}
		if len(snaps) == 0 || first <= 1 {
			t.Errorf("%s: %d snapshots, log starts at %d: want a snapshot and a compacted log", n.id, len(snaps), first)
		}
	}
	if c.compared == 0 {
		t.Error("no log entry was compared across the nodes")
	}
	t.Logf("%d commands applied (log index %d), %d failovers (new leader after %v), %d log entries compared; restart after a stop caught up in %v, after a crash in %v",
		applied, c.leader().raft.LastIndex(), len(failoverTimes), failoverTimes, c.compared, stopRecovery.Round(time.Millisecond), crashRecovery.Round(time.Millisecond))
}

// TestFreshStart starts a node on an empty store, which works only if the
// store's missing keys read as "not found" to raft, then restarts it on
// the same store.
func TestFreshStart(t *testing.T) {
	c := newCluster(t)
	n := &node{id: "solo", dir: t.TempDir()}
	c.nodes = []*node{n}
	for round := 0; round < 2; round++ {
		c.start(n, round == 0)
		l := c.leader()
		if err := l.raft.Apply([]byte(fmt.Sprintf("round%d=done", round)), waitLimit).Error(); err != nil {
			t.Fatal(err)
		}
		if got := n.fsm.state(); got[fmt.Sprintf("round%d", round)] != "done" {
			t.Fatalf("round %d: state %v", round, got)
		}
		c.stop(n)
	}
}
