// Package browsertest runs remote's Server under a real browser: a page of
// another origin, in headless Chromium, uses Streamable HTTP with a bearer
// token, as a web client of an agent does. It is a module of its own so
// that the browser driver (chromedp) is no dependency of remote's users.
// The tests need Chromium (/usr/bin/chromium, or ACPRPC_CHROMIUM); set
// ACPRPC_SKIP_BROWSER=1 to skip them knowingly.
package browsertest
