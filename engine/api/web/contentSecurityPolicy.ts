/**
 * The Content-Security-Policy of the app's window, wherever it is shown. Electron main sends it as a response header
 * (dev server), web mode's server sends it with every response (webServer.ts), and renderer/index.html carries the
 * same string in a meta tag, because responses for file:// pages do not pass through session.webRequest. tests/shell/security.test.ts checks that the two are identical.
 *
 * No remote origins anywhere: the app ships everything it runs. Each non-obvious source has its reason:
 * - script-src 'wasm-unsafe-eval': compiling WebAssembly (the tfjs wasm backend); it does not allow eval() of JS.
 * - worker-src blob:: the tfjs wasm threaded build starts its pthread workers from Blob URLs it makes itself.
 * - style-src 'unsafe-inline': Svelte in dev injects <style> elements and chart/tree libraries set style attributes;
 *   inline *scripts* stay forbidden.
 * - connect-src 'self': under CSP Level 3, 'self' also matches ws:/wss: on the page's own host and port, which is where
 *   the web-mode socket lives. A bare `ws:` would allow every host, so it is not listed.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self' 'wasm-unsafe-eval'",
  "worker-src 'self' blob:",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');

/** frame-ancestors is ignored (with a console warning) in a meta tag, so only the header carries it. */
export const CONTENT_SECURITY_POLICY_HEADER = `${CONTENT_SECURITY_POLICY}; frame-ancestors 'none'`;

/**
 * The response headers with our policy in place of any the server sent. Header names are case-insensitive, so every
 * spelling of Content-Security-Policy is dropped first; otherwise a server's laxer policy would sit beside ours.
 */
export function withContentSecurityPolicy(
  responseHeaders: Readonly<Record<string, string | string[]>> | undefined,
): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(responseHeaders ?? {})) {
    if (name.toLowerCase() !== 'content-security-policy') headers[name] = value;
  }
  headers['Content-Security-Policy'] = [CONTENT_SECURITY_POLICY_HEADER];
  return headers;
}
