import { announce, loadBuilt, replaceFunction } from './replace-export';

const observer = loadBuilt<{ RequestLogController: { prototype: { requestCompleted: (...args: never[]) => unknown } } }>('http/request-observer.hook');

/** Without the request log: Fastify's log controller writes no "request completed" line; the level and every other line stay. */
replaceFunction(observer.RequestLogController.prototype, 'requestCompleted', 'src/http/request-observer.hook RequestLogController.prototype', () => () => {});
announce('request log off: RequestLogController.prototype.requestCompleted is a no-op');
