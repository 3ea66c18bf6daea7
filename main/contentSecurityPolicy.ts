/**
 * The window's Content-Security-Policy lives in engine/api/web/contentSecurityPolicy.ts, because web mode (engine/) sends it
 * too and engine/ imports nothing from main/. Main uses it from here.
 */
export {
  CONTENT_SECURITY_POLICY,
  CONTENT_SECURITY_POLICY_HEADER,
  withContentSecurityPolicy,
} from '../engine/api/web/contentSecurityPolicy';
