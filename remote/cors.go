package remote

import (
	"net/http"
	"strings"
)

// allowCrossOrigin adds the CORS headers a browser needs to let a page of
// an allowed origin (one that passed the Origin check) use Streamable
// HTTP: read the Acp-Connection-Id of the answer to initialize, and send
// the ACP headers, for which it first asks with an OPTIONS preflight. It
// reports whether r was that preflight, now answered. WebSocket needs none
// of this: browsers do not apply CORS to it.
func allowCrossOrigin(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Allow-Credentials", "true")
	h.Set("Access-Control-Expose-Headers", HeaderConnectionID)
	h.Add("Vary", "Origin")
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		return false
	}
	h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
	h.Set("Access-Control-Allow-Headers", strings.Join([]string{"Content-Type", "Authorization", HeaderConnectionID, HeaderSessionID}, ", "))
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
	return true
}
