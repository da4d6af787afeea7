import { ArrayMaxSize, ArrayMinSize, IsArray, IsDefined, IsString } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import { API_KEY_LIMITS } from '../limits';

/** Body of `POST /v1/credentials/revoke` (docs/api-keys.md "Revocation"): the keys someone found, as found. */
export class RevokeCredentialsInput {
  @IsDefined({ message: '$property is required' })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(API_KEY_LIMITS.maxRevokedPerRequest)
  @IsString({ each: true })
  @JSONSchema({
    description:
      `1 to ${API_KEY_LIMITS.maxRevokedPerRequest} API keys, each as found (e.g. \`pst_sk_…\`): ` +
      'any that is active is revoked; unknown and malformed ones are ignored.',
    items: { type: 'string' },
  })
  credentials!: string[];
}
