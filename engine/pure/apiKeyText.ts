/**
 * What a key-variable field (a policy source's `apiKeyEnv`) may hold: the NAME of an environment variable, never the
 * key. Shared by the host's checks (engine/api/endpointEval/endpointEvalChecks.ts) and the app's form, which refuses a typed key
 * before it is sent anywhere (renderer/src/components/EndpointEvalForm.svelte). Imports nothing.
 */

/** An environment variable name as policySource.ts's schema takes it. */
export const ENV_NAME_TEXT = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/**
 * Whether the text looks like a key rather than the name of a variable: characters a name cannot have (sk-…, a
 * base64 tail), a known key prefix (sk-, hf_, gsk_, AKIA…), or long with digits and lower- and upper-case letters
 * mixed (a name is one case, or snake_case).
 */
export function looksLikeKey(text: string): boolean {
  const t = text.trim();
  if (t === '') return false;
  if (!ENV_NAME_TEXT.test(t)) return t.length >= 12;
  if (/^(sk|pk|rk|hf|gsk|xai|ghp|gho|github_pat|glpat|AKIA|AIza|key|token)[-_]?[A-Za-z0-9]{8,}/.test(t)) return true;
  if (t.length >= 20 && /\d/.test(t) && /[a-z]/.test(t) && /[A-Z]/.test(t)) return true;
  return t.length >= 32 && /\d/.test(t) && /[A-Za-z]/.test(t) && !t.includes('_');
}
