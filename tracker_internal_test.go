package acprpc

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The table finds a session's requests in the order they came, through
// removals at either end and in the middle, keeps apart sessions and
// requests naming none, and holds nothing for a session once its last
// request has gone.
func TestIncomingTableSessions(t *testing.T) {
	var tab incomingTable
	req := func(id int, session string) *inRequest {
		raw := []byte(strconv.Itoa(id))
		r := &inRequest{rawID: raw, key: Int64ID(int64(id)).Key().key, req: Request{SessionID: session}}
		require.True(t, tab.add(r))
		return r
	}
	a := []*inRequest{req(1, "a"), req(2, "a"), req(3, "a"), req(4, "a")}
	b := req(5, "b")
	none := req(6, "")
	assert.Equal(t, a, tab.inScope("a"))
	assert.Equal(t, []*inRequest{b}, tab.inScope("b"))
	assert.Empty(t, tab.inScope(""), "a request naming no session is in none")
	assert.Empty(t, tab.inScope("c"))

	tab.remove(a[1]) // the middle
	assert.Equal(t, []*inRequest{a[0], a[2], a[3]}, tab.inScope("a"))
	tab.remove(a[3]) // the last added
	assert.Equal(t, []*inRequest{a[0], a[2]}, tab.inScope("a"))
	tab.remove(a[0]) // the first
	assert.Equal(t, []*inRequest{a[2]}, tab.inScope("a"))
	late := req(7, "a")
	assert.Equal(t, []*inRequest{a[2], late}, tab.inScope("a"))

	// A request that never got in (its ID was busy) is not removed in the
	// place of the one that holds the ID.
	dup := &inRequest{rawID: []byte("7"), key: Int64ID(7).Key().key, req: Request{SessionID: "a"}}
	require.False(t, tab.add(dup))
	tab.remove(dup)
	assert.Equal(t, []*inRequest{a[2], late}, tab.inScope("a"))

	for _, r := range []*inRequest{a[2], late, b, none} {
		tab.remove(r)
	}
	assert.Empty(t, tab.scopes, "nothing is kept for sessions with no request in flight")
	assert.Empty(t, tab.m)
}
