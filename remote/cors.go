package remote

import (
	"net/http"
	"strings"
)

// allowCrossOrigin adds the CORS headers a browser needs to let a page of
// origin, one the Server lets in (allowedPage), use Streamable HTTP: read
// every answer, refusals included, and the Acp-Connection-Id (and
// Acp-Single-Stream) of the answer to initialize, and send the ACP headers, for which it first asks with an
// OPTIONS preflight. WebSocket needs none of this: browsers do not apply
// CORS to it.
func allowCrossOrigin(w http.ResponseWriter, origin string) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Allow-Credentials", "true")
	h.Set("Access-Control-Expose-Headers", HeaderConnectionID+", "+HeaderSingleStream)
	h.Add("Vary", "Origin")
}

// isPreflight reports whether r is a CORS preflight: an OPTIONS request
// that names the method the page means to use.
func isPreflight(r *http.Request) bool {
	return r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
}

// answerPreflight grants a preflight of a page the Server lets in.
func answerPreflight(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
	h.Set("Access-Control-Allow-Headers", strings.Join([]string{"Content-Type", "Authorization", HeaderConnectionID, HeaderSessionID, HeaderSingleStream}, ", "))
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
}
