// A real DNS server for the tests (dns2) on 127.0.0.1, UDP and TCP on one free port: a table of TXT records the
// test changes as it goes, and a switch that makes it fail (SERVFAIL) or say nothing at all. Tessera reaches it
// through DNS_SERVERS=127.0.0.1:<port>. An answer too big for UDP is truncated (TC), and the resolver asks again
// over TCP, as with a real server.
import dns2 from 'dns2';

const { Packet } = dns2;

/** A TXT record's value: a string is one character-string, a list several (joined by readers); Buffers go as bytes. */
export type TxtValue = string | Buffer | (string | Buffer)[];

export type DnsMode = 'answer' | 'servfail' | 'silent';

export interface TestDnsServer {
  port: number;
  /** `127.0.0.1:<port>`, for DNS_SERVERS. */
  address: string;
  /** Name (lower-case, no trailing dot) -> its TXT records. A name not in the table is NXDOMAIN. */
  txt: Map<string, TxtValue[]>;
  mode: DnsMode;
  /** Questions asked, for tests that count lookups. */
  questions: string[];
  stop(): Promise<void>;
}

/** A character-string holds at most 255 bytes (RFC 1035 3.3): a longer value is split, as zone files do. */
function characterStrings(value: TxtValue): Buffer[] {
  const parts = (Array.isArray(value) ? value : [value]).map((p) => (Buffer.isBuffer(p) ? p : Buffer.from(p, 'utf8')));
  return parts.flatMap((p) => {
    const chunks: Buffer[] = [];
    for (let i = 0; i < p.length; i += 255) chunks.push(p.subarray(i, i + 255));
    return chunks.length ? chunks : [Buffer.alloc(0)];
  });
}

export async function startDnsServer(): Promise<TestDnsServer> {
  const state = { mode: 'answer' as DnsMode, txt: new Map<string, TxtValue[]>(), questions: [] as string[] };
  const handle = (request: any, send: (response: any) => void) => {
    const [question] = request.questions;
    const name = String(question?.name ?? '')
      .toLowerCase()
      .replace(/\.$/, '');
    state.questions.push(name);
    if (state.mode === 'silent') return;
    const response: any = Packet.createResponseFromRequest(request);
    response.header.aa = 1;
    if (state.mode === 'servfail') {
      response.header.rcode = Packet.RCODE.SERVFAIL;
      return send(response);
    }
    const records = state.txt.get(name);
    if (!records) {
      response.header.rcode = Packet.RCODE.NXDOMAIN;
      return send(response);
    }
    if (question.type === Packet.TYPE.TXT) {
      for (const value of records) {
        response.answers.push({
          name: question.name,
          type: Packet.TYPE.TXT,
          class: Packet.CLASS.IN,
          ttl: 1,
          data: characterStrings(value),
        });
      }
    }
    send(response);
  };
  // One port for both transports: a free UDP port, then TCP on the same number (which something else may hold).
  for (let attempt = 0; ; attempt++) {
    const server: any = dns2.createServer({ udp: true, tcp: true, handle });
    // The server repeats its sockets' errors as its own: a port taken is handled below, not thrown.
    server.on('error', () => {});
    let port = 0;
    try {
      port = await listen(server.servers.udp, (cb) => server.servers.udp.bind(0, '127.0.0.1', cb));
      await listen(server.servers.tcp, (cb) => server.servers.tcp.listen(port, '127.0.0.1', cb));
    } catch (error) {
      try {
        server.servers.udp.close();
      } catch {
        // not bound
      }
      if (attempt >= 20) throw error;
      continue;
    }
    return {
      port,
      address: `127.0.0.1:${port}`,
      txt: state.txt,
      get mode() {
        return state.mode;
      },
      set mode(mode: DnsMode) {
        state.mode = mode;
      },
      questions: state.questions,
      stop: () => server.close(),
    };
  }
}

/** Binds with `bind`, answering the port bound or the binding's error. */
function listen(socket: any, bind: (done: () => void) => void): Promise<number> {
  return new Promise((resolve, reject) => {
    socket.once('error', reject);
    bind(() => {
      socket.off('error', reject);
      resolve(socket.address().port);
    });
  });
}
