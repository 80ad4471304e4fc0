/**
 * The real memcached binary, run the way a rendered pod runs it: the memcached container's args and
 * env, its volumes written to a temporary directory (Secret and ConfigMap contents, emptyDirs),
 * the init containers first, as the pod's uid and under the pod's host name when this process may
 * (root: setpriv and unshare --uts). Only two things are rewritten: each mount path gets the
 * temporary directory as its prefix, and `-p` gets a free loopback port (`-l 127.0.0.1` keeps it off
 * the network).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, Socket } from 'node:net'
import { hostname, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import type { RenderedObject } from '../../operator/render/manifest.ts'
import { writeAtomic } from './atomic-writer.ts'

/**
 * The Debian packages the memcached tests need (CI's `.ci/run` installs them, the README names
 * them): the binary, Cyrus SASL's saslpasswd2 and PLAIN mechanism, openssl for the certificates.
 */
export const MEMCACHED_PACKAGES = ['memcached', 'sasl2-bin', 'libsasl2-modules', 'openssl']
export const INSTALL_HINT = `apt-get update && apt-get install -y ${MEMCACHED_PACKAGES.join(' ')}`

/** The memcached binary (MEMCACHED or the PATH's); a clear error naming the install command when there is none. */
export function memcachedBinary(): string {
  const bin = process.env.MEMCACHED ?? 'memcached'
  const r = spawnSync(bin, ['-V'], { encoding: 'utf8' })
  if (r.error || r.status !== 0) throw new Error(`the memcached binary (${bin}) is needed by this test and is missing: install it with \`${INSTALL_HINT}\` (as root, or with sudo), or set MEMCACHED to its path`)
  return bin
}

/** Fails clearly, naming the install command, when a tool the memcached tests run is missing. */
export function requireTool(name: string, args = ['-v']): void {
  const r = spawnSync(name, args, { stdio: 'ignore' })
  if (r.error) throw new Error(`${name} is needed by this test and is missing: install it with \`${INSTALL_HINT}\` (as root, or with sudo)`)
}

/** `memcached -V`'s version, e.g. "1.6.18". */
export function memcachedVersion(): string {
  return spawnSync(memcachedBinary(), ['-V'], { encoding: 'utf8' }).stdout.trim().replace(/^memcached /, '')
}

/** Whether this memcached has extstore (its help lists ext_path). */
export function hasExtstore(): boolean {
  return spawnSync(memcachedBinary(), ['-h'], { encoding: 'utf8' }).stdout.includes('ext_path')
}

export const isRoot = process.getuid?.() === 0
/** Whether this process may give a child its own host name (root, and a runtime that allows a UTS namespace). */
const canSetHostname = isRoot && spawnSync('unshare', ['--uts', 'true'], { stdio: 'ignore' }).status === 0

export interface Container {
  name: string
  image: string
  command?: string[]
  args?: string[]
  env?: { name: string; value: string }[]
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[]
}
export interface Volume {
  name: string
  secret?: { secretName: string; items?: { key: string; path: string }[] }
  configMap?: { name: string; items?: { key: string; path: string }[] }
  emptyDir?: Record<string, unknown>
  ephemeral?: { volumeClaimTemplate: Record<string, unknown> }
}
export interface PodSpec {
  containers: Container[]
  initContainers?: Container[]
  volumes?: Volume[]
  securityContext?: { runAsUser?: number; runAsGroup?: number; fsGroup?: number }
}

/** The pod template of a render's Deployment or StatefulSet. */
export function podOf(objects: RenderedObject[]): PodSpec {
  const w = objects.find((o) => o.kind === 'Deployment' || o.kind === 'StatefulSet') as unknown as { spec: { template: { spec: PodSpec } } } | undefined
  if (!w) throw new Error('the render has no workload')
  return w.spec.template.spec
}

/** The names of a render's StatefulSet's volumeClaimTemplates: volumes its pods get that their template does not name. */
export function claimTemplatesOf(objects: RenderedObject[]): string[] {
  const w = objects.find((o) => o.kind === 'StatefulSet') as unknown as { spec: { volumeClaimTemplates?: { metadata: { name: string } }[] } } | undefined
  return (w?.spec.volumeClaimTemplates ?? []).map((c) => c.metadata.name)
}

/** A free TCP port on loopback. */
export async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as { port: number }).port
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** A pod's files: where its mounts are, and how a path of the pod maps into them. */
export class PodFiles {
  readonly root: string
  #mounts: string[] = []
  constructor() {
    this.root = mkdtempSync(join(tmpdir(), 'mc-pod-'))
    // The pod's uid must reach its mounts.
    chmodSync(this.root, 0o755)
  }
  /** A string of the pod (arg, env value, script) with every mount path under the temporary root. */
  path(s: string): string {
    if (this.#mounts.length === 0) return s
    // One pass, longest first, whole path segments only: /etc/memcached/sasl is not a prefix of /etc/memcached/sasl-db.
    const alternatives = [...this.#mounts].sort((a, b) => b.length - a.length).map((m) => m.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    return s.replace(new RegExp(`(${alternatives.join('|')})(?=/|$|[^A-Za-z0-9_.-])`, 'g'), (m) => this.root + m)
  }
  /**
   * Writes the volumes `container` mounts: a Secret's keys from `secrets` (all of them, or the
   * volume's items), a ConfigMap's from the render's ConfigMaps, an empty world-writable emptyDir
   * (as the kubelet makes it) that outlives the container, as it does in a pod; a claim's volume (a
   * generic ephemeral volume, or one of a StatefulSet's volumeClaimTemplates, `claims`) as a new
   * filesystem's root: root's, 0755, given to the pod's fsGroup when it has one as the kubelet does
   * (pkg/volume/volume_linux.go changeFilePermission: chown to the group, mode | rw for the group,
   * x and setgid on a directory).
   */
  mount(pod: PodSpec, container: Container, objects: RenderedObject[], secrets: Record<string, Record<string, string | Buffer>>, claims: string[] = []): void {
    for (const m of container.volumeMounts ?? []) {
      const volume = pod.volumes?.find((v) => v.name === m.name) ?? (claims.includes(m.name) ? { name: m.name, ephemeral: { volumeClaimTemplate: {} } } : undefined)
      if (!volume) throw new Error(`volume ${m.name} of container ${container.name} is not among the pod's volumes`)
      const dir = this.root + m.mountPath
      if (!this.#mounts.includes(m.mountPath)) this.#mounts.push(m.mountPath)
      mkdirSync(dir, { recursive: true })
      for (let d = dir; d.length > this.root.length; d = dirname(d)) chmodSync(d, 0o755)
      if (volume.emptyDir) {
        chmodSync(dir, 0o777)
        continue
      }
      if (volume.ephemeral) {
        chownSync(dir, 0, 0)
        chmodSync(dir, 0o755)
        const group = pod.securityContext?.fsGroup
        if (group !== undefined) {
          chownSync(dir, 0, group)
          chmodSync(dir, 0o755 | 0o660 | 0o110 | 0o2000)
        }
        continue
      }
      let data: Record<string, string | Buffer>
      let items: { key: string; path: string }[] | undefined
      if (volume.secret) {
        const s = secrets[volume.secret.secretName]
        if (!s) throw new Error(`the test gives no Secret ${volume.secret.secretName}`)
        data = s
        items = volume.secret.items
      } else if (volume.configMap) {
        const cm = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === volume.configMap!.name) as unknown as { data: Record<string, string> } | undefined
        if (!cm) throw new Error(`the render has no ConfigMap ${volume.configMap.name}`)
        data = cm.data
        items = volume.configMap.items
      } else throw new Error(`volume ${m.name}: only secret, configMap and emptyDir volumes are written`)
      const payload: Record<string, string | Buffer> = {}
      for (const { key, path } of items ?? Object.keys(data).map((k) => ({ key: k, path: k }))) {
        // The kubelet refuses to start a pod whose volume names a key the Secret lacks.
        if (!(key in data)) throw new Error(`volume ${m.name}: key ${key} is missing`)
        payload[path] = data[key]!
      }
      writeAtomic(dir, payload)
    }
  }
  remove(): void {
    rmSync(this.root, { recursive: true, force: true })
  }
}

/** How a process of the pod is started: as its uid, under its host name (both only as root). */
export function podCommand(argv: string[], opts: { uid?: number; gid?: number; hostname?: string; fsGroup?: number }): string[] {
  let cmd = argv
  // The container runtime gives a pod's processes its fsGroup as a supplementary group.
  const groups = opts.fsGroup !== undefined ? `--groups=${opts.fsGroup}` : '--clear-groups'
  if (isRoot && opts.uid !== undefined) cmd = ['setpriv', `--reuid=${opts.uid}`, `--regid=${opts.gid ?? opts.uid}`, groups, ...cmd]
  if (canSetHostname && opts.hostname) cmd = ['unshare', '--uts', '--', 'sh', '-c', 'hostname "$0" && exec "$@"', opts.hostname, ...cmd]
  return cmd
}

/** The host name memcached sees (the SASL realm): the pod's under unshare, else this machine's. */
export function effectiveHostname(pod?: string): string {
  return canSetHostname && pod ? pod : hostname()
}

export interface Exit {
  code: number | null
  signal: NodeJS.Signals | null
  output: string
}

/** A memcached process started from a render. */
export class Memcached {
  readonly port: number
  readonly args: string[]
  readonly files: PodFiles
  readonly hostname: string
  #proc: ChildProcess
  #output = ''
  readonly exited: Promise<Exit>
  constructor(proc: ChildProcess, port: number, args: string[], files: PodFiles, host: string) {
    this.#proc = proc
    this.port = port
    this.args = args
    this.files = files
    this.hostname = host
    proc.stdout?.on('data', (d: Buffer) => (this.#output += d.toString()))
    proc.stderr?.on('data', (d: Buffer) => (this.#output += d.toString()))
    this.exited = new Promise((resolve) => proc.on('exit', (code, signal) => setImmediate(() => resolve({ code, signal, output: this.#output }))))
  }
  get pid(): number {
    return this.#proc.pid!
  }
  get output(): string {
    return this.#output
  }
  async stop(): Promise<Exit> {
    if (this.#proc.exitCode === null && this.#proc.signalCode === null) this.#proc.kill('SIGTERM')
    const timer = setTimeout(() => this.#proc.kill('SIGKILL'), 5000)
    const exit = await this.exited
    clearTimeout(timer)
    this.files.remove()
    return exit
  }
}

export interface StartOptions {
  /** Secret contents by name, as the pod's Secret volumes read them. */
  secrets?: Record<string, Record<string, string | Buffer>>
  /** The pod's name (its host name: the SASL realm). */
  podName?: string
  /** Arguments added after the rendered ones (e.g. -vv for a diagnosis); none in the conformance checks. */
  extraArgs?: string[]
  /** What SASL's configuration file gets besides the rendered lines (see test/memcached-sasl.test.ts). */
  beforeStart?: (files: PodFiles, env: Record<string, string>) => void
}

/**
 * Runs the render's pod: its init containers (each to completion, failing the start when one
 * fails), then memcached, and waits until it accepts connections or exits.
 */
export async function startPod(objects: RenderedObject[], opts: StartOptions = {}): Promise<Memcached | Exit> {
  const bin = memcachedBinary()
  const pod = podOf(objects)
  const files = new PodFiles()
  const uid = pod.securityContext?.runAsUser
  const gid = pod.securityContext?.runAsGroup
  const fsGroup = pod.securityContext?.fsGroup
  const claims = claimTemplatesOf(objects)
  const podName = opts.podName ?? 'cache-0'
  const envOf = (c: Container): Record<string, string> => ({ PATH: '/usr/sbin:/usr/bin:/sbin:/bin', ...Object.fromEntries((c.env ?? []).map((e) => [e.name, files.path(e.value)])) })
  for (const init of pod.initContainers ?? []) {
    files.mount(pod, init, objects, opts.secrets ?? {}, claims)
    const argv = [...(init.command ?? []), ...(init.args ?? [])].map((a) => files.path(a))
    const initCmd = podCommand(argv, { uid, gid, hostname: podName, ...(fsGroup !== undefined ? { fsGroup } : {}) })
    const r = spawnSync(initCmd[0]!, initCmd.slice(1), { env: envOf(init), encoding: 'utf8', cwd: '/' })
    if (r.status !== 0) {
      files.remove()
      return { code: r.status, signal: r.signal, output: `init container ${init.name}: ${r.stdout}${r.stderr}${r.error?.message ?? ''}` }
    }
  }
  const c = pod.containers.find((x) => x.name === 'memcached')!
  files.mount(pod, c, objects, opts.secrets ?? {}, claims)
  const port = await freePort()
  const args = (c.args ?? []).map((a) => files.path(a))
  const p = args.indexOf('-p')
  if (p < 0) throw new Error('the rendered args have no -p')
  args[p + 1] = String(port)
  const env = envOf(c)
  opts.beforeStart?.(files, env)
  const argv = [bin, '-l', '127.0.0.1', ...args, ...(opts.extraArgs ?? [])]
  const cmd = podCommand(argv, { uid, gid, hostname: podName, ...(fsGroup !== undefined ? { fsGroup } : {}) })
  const proc = spawn(cmd[0]!, cmd.slice(1), { env, cwd: '/', stdio: ['ignore', 'pipe', 'pipe'] })
  const mc = new Memcached(proc, port, args, files, effectiveHostname(podName))
  const exit = await waitListening(mc)
  if (exit) {
    files.remove()
    return exit
  }
  return mc
}

/** Runs memcached with plain arguments (no render), for the start-up rules and the memory benchmark. */
export async function startArgs(args: string[], opts: { uid?: number } = {}): Promise<Memcached | Exit> {
  const files = new PodFiles()
  const port = await freePort()
  const cmd = podCommand([memcachedBinary(), '-l', '127.0.0.1', '-p', String(port), ...args], { uid: opts.uid ?? 11211 })
  const proc = spawn(cmd[0]!, cmd.slice(1), { cwd: '/', stdio: ['ignore', 'pipe', 'pipe'] })
  const mc = new Memcached(proc, port, args, files, hostname())
  const exit = await waitListening(mc)
  if (exit) {
    files.remove()
    return exit
  }
  return mc
}

async function waitListening(mc: Memcached): Promise<Exit | undefined> {
  let exit: Exit | undefined
  void mc.exited.then((e) => (exit = e))
  for (let i = 0; i < 200; i++) {
    if (exit) return exit
    const ok = await new Promise<boolean>((resolve) => {
      const s = new Socket()
      s.once('connect', () => {
        s.destroy()
        resolve(true)
      })
      s.once('error', () => resolve(false))
      s.connect(mc.port, '127.0.0.1')
    })
    if (ok) return exit
    await new Promise((r) => setTimeout(r, 50))
  }
  await mc.stop()
  return { code: null, signal: null, output: `memcached did not listen on ${mc.port} within 10 s: ${mc.output}` }
}

/** A started memcached, or the test fails with its exit and output. */
export function running(r: Memcached | Exit): Memcached {
  if (r instanceof Memcached) return r
  throw new Error(`memcached exited (code ${r.code}, signal ${r.signal}): ${r.output.trim()}`)
}

/** VmRSS and VmHWM (peak) of a process, in KiB. */
export function rss(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const field = (n: string) => Number(new RegExp(`^${n}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? NaN)
  return { rss: field('VmRSS'), peak: field('VmHWM') }
}
