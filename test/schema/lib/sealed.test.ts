// Secrets sealed at rest (schema/lib/sealed.ts) open under the key they were sealed with, and values stored before the
// helper moved to schema/lib (sealed by schema/push/secret.ts's encryptSecret) still open: the rows keep them.
import { describe, expect, it } from 'vitest';
import { decodeProtectedHeader } from 'jose';
import { seal, unseal } from '../../../schema/lib/sealed.ts';

const key = Buffer.from('01080f161d242b323940474e555c636a71787f868d949ba2a9b0b7bec5ccd3da', 'hex');

/** Sealed under `key` by schema/push/secret.ts's encryptSecret, before the helper moved to schema/lib. */
const storedBefore = {
  webhookSecret: {
    plaintext: 'whsec_MfKQ9r4gkorVpg3yWmMrWhdCLbPoMnf0aGxHo+q7i3s=',
    sealed:
      'eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2R0NNIiwia2lkIjoic2VjcmV0LWtleSJ9..2t_RQRzPkRsNM1LA.P6obx2oNohxq_xdkZBpu0GNOEqKj8c1-Ff-3-11_JEcCipl2CKs9skJGHQ7vXnjSaJ4.7NP8c1mrwi1Kjr0OCoq8gg',
  },
  totpSecret: {
    plaintext: 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP',
    sealed:
      'eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2R0NNIiwia2lkIjoic2VjcmV0LWtleSJ9..c84NZguw0MMiWJW3.jPkwxc2dzuaeVp5rt_pprhguvk5Cc5Ga2os21-l3elc.TVpSq2C5q474Gy43xIZ1UQ',
  },
};

describe('sealed secrets', () => {
  it('opens the webhook and TOTP secrets stored before the helper moved', async () => {
    for (const { plaintext, sealed } of Object.values(storedBefore)) {
      expect(await unseal(sealed, key)).toBe(plaintext);
    }
  });

  it('seals in the stored format: a compact JWE, dir + A256GCM, kid secret-key', async () => {
    const sealed = await seal('whsec_abc', key);
    expect(decodeProtectedHeader(sealed)).toEqual({ alg: 'dir', enc: 'A256GCM', kid: 'secret-key' });
    expect(sealed.split('.')).toHaveLength(5);
    expect(await unseal(sealed, key)).toBe('whsec_abc');
  });

  it('refuses to open under another key, with the code signing keys tell a wrong SECRET_KEY by', async () => {
    const other = new Uint8Array(32).fill(9);
    await expect(unseal(storedBefore.totpSecret.sealed, other)).rejects.toMatchObject({
      code: 'ERR_JWE_DECRYPTION_FAILED',
    });
  });
});
