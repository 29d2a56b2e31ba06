import { describe, expect, it } from 'vitest';

describe('runtime', () => {
  it('runs on Node 24 LTS, pinned through the registry (not the system Node 20)', () => {
    expect(process.versions.node).toMatch(/^24\./);
  });
});
