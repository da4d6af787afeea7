import * as newline from '../../src/http/json-newline.hook';
import { announce, replaceFunction } from './replace-export';

/** Without the newline hook: JSON bodies are sent as serialised, with no onSend hook. */
replaceFunction(newline, 'endJsonWithNewline', 'src/http/json-newline.hook', () => () => {});
announce('newline hook off: endJsonWithNewline() registers nothing');
