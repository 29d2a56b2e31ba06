// The OAuth clients a process has authenticated, kept so that a code exchange or a refresh needs no statement of
// its own to read its client (docs/architecture.md#hot-paths: token requests in as few statements as possible). A
// remembered row is only a guess: the statement that redeems the code or refresh token also checks that the client's
// row is still the version remembered (its xmin, which every update of the row changes, whoever writes it, in any
// process), and a request whose guess fails is answered from a fresh read (token.service.ts). A rotated secret or a
// disabled client therefore stops working at once, as before.

/** What a remembered client must carry: its public id and the row version it was read at. */
export interface VersionedClient {
  clientId: string;
  version: string;
}

/** How many clients a process remembers; past that, the longest remembered is dropped. */
const MAX_CLIENTS = 1_000;

export class RememberedClients<C extends VersionedClient = VersionedClient> {
  readonly #clients = new Map<string, C>();

  get(clientId: string): C | undefined {
    return this.#clients.get(clientId);
  }

  remember(client: C): void {
    this.#clients.delete(client.clientId);
    if (this.#clients.size >= MAX_CLIENTS) {
      const oldest = this.#clients.keys().next();
      if (!oldest.done) this.#clients.delete(oldest.value);
    }
    this.#clients.set(client.clientId, client);
  }

  forget(clientId: string): void {
    this.#clients.delete(clientId);
  }
}
