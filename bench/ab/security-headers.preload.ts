import * as securityHeaders from '../../src/http/security-headers';
import { announce, replaceFunction } from './replace-export';

/** Without the security headers: no onSend hook for Cache-Control and X-Content-Type-Options (and no CORS, off in the bench anyway). */
replaceFunction(securityHeaders, 'hardenResponses', 'src/http/security-headers', () => () => Promise.resolve());
announce('security headers off: hardenResponses() registers nothing');
