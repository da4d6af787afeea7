import * as validation from '../../src/validation/validate-input';
import { announce, replaceFunction } from './replace-export';

/**
 * Without validation: the instance validateInput builds (the class's initialisers give the
 * defaults, the client's defined values overwrite them), with no check of the declared properties
 * and no class-validator `validate`.
 */
replaceFunction(validation, 'validateInput', 'src/validation/validate-input', () => (type, values) => {
  const input = new type();
  for (const [key, value] of Object.entries(values ?? {})) {
    if (value !== undefined) (input as Record<string, unknown>)[key] = value;
  }
  return Promise.resolve(input);
});
announce('validation off: validateInput() builds the instance without checking it');
