/**
 * The operator's side of memcached's text protocol (protocol.txt): one connection to one pod, over
 * TCP or TLS, authenticated with the auth file's credentials when memcached asks for them (`-Y`:
 * the first command is a `set` of any key whose value is `user password`, proto_text.c
 * process_update_command under settings.auth_file), and the few commands the operator sends:
 * `refresh_certs`, `cache_memlimit`, `stats`.
 */
import { createHash } from 'node:crypto'
import { connect as tcpConnect, type Socket } from 'node:net'
import { connect as tlsConnect, type TLSSocket } from 'node:tls'

/** Where and how to reach a pod's memcached. */
export interface MemcachedTarget {
  host: string
  port: number
  /**
   * memcached serves TLS only (`-Z`). `cert`/`key` (PEM) are presented when memcached asks for a
   * client certificate (ssl_verify_mode ≥ 1). The server is not verified against a CA: the caller
   * compares the certificate it serves with the one it expects ({@link MemcachedConnection.served}).
   */
  tls?: { cert?: string | Buffer; key?: string | Buffer }
  /** The auth file's credentials (`-Y`), sent before any command. */
  credentials?: { user: string; password: string }
  /** How long connecting, and each answer, may take (default 5 s). */
  timeoutMs?: number
}

/** The SHA-256 fingerprint of a DER certificate, as `openssl x509 -fingerprint -sha256` prints it (upper-case hex pairs joined by colons). */
export function fingerprintOf(der: Buffer): string {
  return createHash('sha256').update(der).digest('hex').toUpperCase().replace(/(..)(?!$)/g, '$1:')
}

/** A failure to talk to memcached: `stage` says how far it got (connect, tls, auth, command). */
export class MemcachedError extends Error {
  readonly stage: 'connect' | 'auth' | 'command'
  constructor(stage: 'connect' | 'auth' | 'command', message: string) {
    super(message)
    this.name = 'MemcachedError'
    this.stage = stage
  }
}

/** One open connection. */
export class MemcachedConnection {
  readonly #socket: Socket | TLSSocket
  readonly #timeoutMs: number
  #buf = ''
  #ended: Error | undefined
  #wake: (() => void) | undefined

  private constructor(socket: Socket | TLSSocket, timeoutMs: number) {
    this.#socket = socket
    this.#timeoutMs = timeoutMs
    socket.setEncoding('utf8')
    socket.on('data', (d: string) => {
      this.#buf += d
      this.#wake?.()
    })
    socket.on('error', (e) => {
      this.#ended ??= e
      this.#wake?.()
    })
    socket.on('close', () => {
      this.#ended ??= new Error('connection closed by memcached')
      this.#wake?.()
    })
  }

  /** Connects (and authenticates when the target has credentials). @throws MemcachedError */
  static async open(target: MemcachedTarget): Promise<MemcachedConnection> {
    const timeoutMs = target.timeoutMs ?? 5000
    const where = `${target.host}:${target.port}`
    const socket = target.tls
      ? tlsConnect({ host: target.host, port: target.port, rejectUnauthorized: false, ...(target.tls.cert ? { cert: target.tls.cert } : {}), ...(target.tls.key ? { key: target.tls.key } : {}) })
      : tcpConnect(target.port, target.host)
    socket.setTimeout(timeoutMs)
    try {
      await new Promise<void>((resolve, reject) => {
        socket.once(target.tls ? 'secureConnect' : 'connect', () => resolve())
        socket.once('error', reject)
        socket.once('timeout', () => reject(new Error(`no ${target.tls ? 'TLS handshake' : 'connection'} within ${timeoutMs} ms`)))
      })
    } catch (err) {
      socket.destroy()
      throw new MemcachedError('connect', `${where}: ${err instanceof Error ? err.message : String(err)}`)
    }
    socket.removeAllListeners('timeout')
    const conn = new MemcachedConnection(socket, timeoutMs)
    if (target.credentials) {
      const value = `${target.credentials.user} ${target.credentials.password}`
      let answer: string
      try {
        answer = await conn.command(`set auth 0 0 ${Buffer.byteLength(value)}\r\n${value}\r\n`)
      } catch (err) {
        // No answer at all: under TLS 1.3 a refused client certificate shows on the first read.
        conn.close()
        throw new MemcachedError('connect', `${where}: ${err instanceof Error ? err.message : String(err)}`)
      }
      if (answer !== 'STORED') {
        conn.close()
        throw new MemcachedError('auth', `${where}: memcached refused the credentials of user ${target.credentials.user}: ${answer}`)
      }
    }
    return conn
  }

  /** The fingerprint ({@link fingerprintOf}) of the certificate the server presented; undefined over TCP. */
  served(): string | undefined {
    const socket = this.#socket as Partial<TLSSocket>
    const der = socket.getPeerX509Certificate?.()?.raw
    return der ? fingerprintOf(der) : undefined
  }

  /** Sends one command line and reads its answer's first line (without CRLF). @throws MemcachedError */
  async command(line: string): Promise<string> {
    this.#socket.write(line.endsWith('\r\n') ? line : `${line}\r\n`)
    return this.#readLine(line)
  }

  async #readLine(line: string): Promise<string> {
    const deadline = Date.now() + this.#timeoutMs
    for (;;) {
      const i = this.#buf.indexOf('\r\n')
      if (i >= 0) {
        const out = this.#buf.slice(0, i)
        this.#buf = this.#buf.slice(i + 2)
        return out
      }
      if (this.#ended) throw new MemcachedError('command', this.#ended.message)
      const left = deadline - Date.now()
      if (left <= 0) throw new MemcachedError('command', `no answer to ${JSON.stringify(line.split('\r\n')[0])} within ${this.#timeoutMs} ms`)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left)
        this.#wake = () => {
          clearTimeout(timer)
          resolve()
        }
      })
      this.#wake = undefined
    }
  }

  /** `stats` as a map. */
  async stats(): Promise<Record<string, string>> {
    const out: Record<string, string> = {}
    let line = await this.command('stats')
    while (line !== 'END') {
      const m = /^STAT (\S+) (.*)$/.exec(line)
      if (!m) throw new MemcachedError('command', `unexpected line in stats: ${JSON.stringify(line)}`)
      out[m[1]!] = m[2]!
      line = await this.#readLine('stats')
    }
    return out
  }

  close(): void {
    this.#socket.destroy()
  }
}
