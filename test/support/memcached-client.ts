/**
 * Just enough of memcached's protocols to talk to the real binary: the text protocol (set, get,
 * stats, the auth file's credentials) over TCP or TLS, and the binary protocol's SASL commands
 * (protocol_binary.h: magic 0x80, a 24-byte header).
 */
import { connect as tcpConnect, type Socket } from 'node:net'
import { connect as tlsConnect, type ConnectionOptions, type TLSSocket } from 'node:tls'

/** A connection that reads by terminator or by length. */
export class Conn {
  readonly socket: Socket | TLSSocket
  #buf = Buffer.alloc(0)
  #closed = false
  #error: Error | undefined
  #wake: (() => void) | undefined
  constructor(socket: Socket | TLSSocket) {
    this.socket = socket
    socket.on('data', (d: Buffer) => {
      this.#buf = Buffer.concat([this.#buf, d])
      this.#wake?.()
    })
    socket.on('close', () => {
      this.#closed = true
      this.#wake?.()
    })
    socket.on('error', (e) => {
      this.#error = e
      this.#wake?.()
    })
  }
  write(data: string | Buffer): void {
    this.socket.write(data)
  }
  async #until(ready: () => number): Promise<Buffer> {
    const deadline = Date.now() + 10_000
    for (;;) {
      const n = ready()
      if (n >= 0) {
        const out = this.#buf.subarray(0, n)
        this.#buf = this.#buf.subarray(n)
        return out
      }
      if (this.#error) throw this.#error
      if (this.#closed) throw new Error(`connection closed (had ${JSON.stringify(this.#buf.toString())})`)
      if (Date.now() > deadline) throw new Error(`no answer within 10 s (had ${JSON.stringify(this.#buf.toString())})`)
      await new Promise<void>((resolve) => {
        this.#wake = resolve
        setTimeout(resolve, 100)
      })
      this.#wake = undefined
    }
  }
  /** Reads through the first occurrence of `end` (a line by default). */
  async readUntil(end = '\r\n'): Promise<string> {
    return (await this.#until(() => {
      const i = this.#buf.indexOf(end)
      return i < 0 ? -1 : i + end.length
    })).toString()
  }
  async read(n: number): Promise<Buffer> {
    return this.#until(() => (this.#buf.length >= n ? n : -1))
  }
  /** Sends a text command and reads its answer through `end`. */
  async command(cmd: string, end = '\r\n'): Promise<string> {
    this.write(cmd)
    return this.readUntil(end)
  }
  /** Resolves when the server closes the connection (or it fails): what it sent before. */
  async closed(): Promise<string> {
    await this.#until(() => (this.#closed || this.#error ? this.#buf.length : -1))
    return this.#buf.toString()
  }
  close(): void {
    this.socket.destroy()
  }
}

export async function plain(port: number): Promise<Conn> {
  const s = tcpConnect(port, '127.0.0.1')
  await new Promise<void>((resolve, reject) => {
    s.once('connect', resolve)
    s.once('error', reject)
  })
  return new Conn(s)
}

/** A TLS connection; rejects when the handshake fails (for TLS 1.3, see {@link tlsUsable}). */
export async function tls(port: number, options: ConnectionOptions = {}): Promise<Conn> {
  const s = tlsConnect({ host: '127.0.0.1', port, servername: 'localhost', rejectUnauthorized: false, ...options })
  await new Promise<void>((resolve, reject) => {
    s.once('secureConnect', resolve)
    s.once('error', reject)
  })
  return new Conn(s)
}

/**
 * Whether the server serves this TLS client: with TLS 1.3 the server checks a client certificate
 * after the client's handshake is done, so a refusal shows on the first exchange, not at connect.
 */
export async function tlsUsable(port: number, options: ConnectionOptions): Promise<string> {
  let conn: Conn
  try {
    conn = await tls(port, options)
  } catch (err) {
    return `refused: ${(err as Error).message}`
  }
  try {
    return (await conn.command('version\r\n')).trim()
  } catch (err) {
    return `refused: ${(err as Error).message}`
  } finally {
    conn.close()
  }
}

/** set then get of one key over the text protocol: the value read back. */
export async function setGet(conn: Conn, key: string, value: string): Promise<string> {
  const stored = await conn.command(`set ${key} 0 0 ${Buffer.byteLength(value)}\r\n${value}\r\n`)
  if (stored !== 'STORED\r\n') throw new Error(`set ${key}: ${JSON.stringify(stored)}`)
  const got = await conn.command(`get ${key}\r\n`, 'END\r\n')
  return /^VALUE \S+ \d+ \d+\r\n([\s\S]*)\r\nEND\r\n$/.exec(got)?.[1] ?? `(not found: ${JSON.stringify(got)})`
}

/** `stats` (or `stats <group>`) as a map. */
export async function stats(conn: Conn, group = ''): Promise<Record<string, string>> {
  const out = await conn.command(`stats${group ? ' ' + group : ''}\r\n`, 'END\r\n')
  return Object.fromEntries(out.split('\r\n').filter((l) => l.startsWith('STAT ')).map((l) => l.split(' ').slice(1, 3) as [string, string]))
}

// protocol_binary.h
export const BIN = { GET: 0x00, SET: 0x01, VERSION: 0x0b, SASL_LIST_MECHS: 0x20, SASL_AUTH: 0x21 } as const
export const BIN_STATUS = { SUCCESS: 0x00, KEY_ENOENT: 0x01, AUTH_ERROR: 0x20 } as const

export function binRequest(op: number, key = '', value: Buffer | string = '', extras: Buffer = Buffer.alloc(0)): Buffer {
  const k = Buffer.from(key)
  const v = Buffer.isBuffer(value) ? value : Buffer.from(value)
  const h = Buffer.alloc(24)
  h.writeUInt8(0x80, 0)
  h.writeUInt8(op, 1)
  h.writeUInt16BE(k.length, 2)
  h.writeUInt8(extras.length, 4)
  h.writeUInt32BE(k.length + extras.length + v.length, 8)
  return Buffer.concat([h, extras, k, v])
}

/** One binary request and its response: the status and the value. */
export async function binary(conn: Conn, op: number, key = '', value: Buffer | string = '', extras?: Buffer): Promise<{ status: number; value: string }> {
  conn.write(binRequest(op, key, value, extras))
  const h = await conn.read(24)
  if (h[0] !== 0x81) throw new Error(`not a binary response: ${JSON.stringify(h.toString())}`)
  const bodyLen = h.readUInt32BE(8)
  const body = await conn.read(bodyLen)
  return { status: h.readUInt16BE(6), value: body.subarray(h.readUInt8(4) + h.readUInt16BE(2)).toString() }
}

/** SASL PLAIN (RFC 4616: authzid NUL authcid NUL password) over the binary protocol. */
export async function saslPlain(conn: Conn, user: string, password: string): Promise<{ status: number; value: string }> {
  return binary(conn, BIN.SASL_AUTH, 'PLAIN', `\0${user}\0${password}`)
}

/** A binary set (flags 0, no expiry). */
export async function binarySet(conn: Conn, key: string, value: string): Promise<{ status: number; value: string }> {
  return binary(conn, BIN.SET, key, value, Buffer.alloc(8))
}
