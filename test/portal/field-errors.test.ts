// portal/src/lib/field-errors.ts: a UserError's field problems named by the labels the user saw, never by the
// GraphQL field names.
import { describe, expect, it } from 'vitest';
import { fieldErrors, labelOf, problemLines } from '../../portal/src/lib/field-errors.ts';

describe('field errors', () => {
  it('names a problem by the form label, or by its name in words when the form has none', () => {
    expect(labelOf('pricePerSeat', { pricePerSeat: 'Price per seat' })).toBe('Price per seat');
    expect(labelOf('redirect_uris.1', { redirectUris: 'Redirect URIs' })).toBe('Redirect URIs');
    expect(labelOf('billingCycle', {})).toBe('Billing cycle');
    expect(
      problemLines(
        [
          { path: 'pricePerSeat', message: 'must be at least 0' },
          { path: '', message: 'is refused' },
        ],
        { pricePerSeat: 'Price per seat' },
      ),
    ).toEqual(['Price per seat: must be at least 0', 'is refused']);
  });

  it("puts each labelled field's problems beside it, and the others in the form's, named by their label", () => {
    const errors = fieldErrors(
      [
        { path: 'redirectUris.1', message: 'must be https' },
        { path: 'slug', message: 'is reserved' },
        { path: 'organizationId', message: 'is required' },
      ],
      { redirectUris: 'Redirect URIs', slug: 'Slug' },
      { redirectUris: ['https://a.example', 'http://b.example'] },
    );
    expect(errors).toEqual({
      redirectUris: ['“http://b.example” must be https'],
      slug: ['is reserved'],
      form: ['Organization ID: is required'],
    });
  });
});
