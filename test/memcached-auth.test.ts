/**
 * The chart's authentication against the real memcached, with the documented Secret format
 * (`user:password` lines): `-Y` in the text protocol, and `-S` (SASL PLAIN in the binary protocol)
 * in a pod named cache-0, whose host name is the realm memcached hands Cyrus SASL.
 */
import { execFileSync } from 'node:child_process'
import { appendFileSync, chmodSync, existsSync, readFileSync } from 'node:fs'
import t from 'tap'
import { loadChart } from '../operator/render/chart.ts'
import { renderInstance } from '../operator/render/engine.ts'
import { BIN_STATUS, binary, BIN, binarySet, plain, saslPlain, setGet } from './support/memcached-client.ts'
import { requireTool, running, startPod, type PodFiles } from './support/memcached.ts'

const chart = loadChart()
const render = (spec: Record<string, unknown>) => renderInstance(chart, { name: 'cache', namespace: 'team', spec: { size: 1, ...spec } }).objects
const users = { passwords: 'alice:s3cret\nbob:hunter2\n' }

t.test('authfile (-Y): nothing before authentication, the Secret\'s users in, a wrong password out', async (t) => {
  const mc = running(await startPod(render({ auth: { enabled: true, secretName: 'users' } }), { secrets: { users } }))
  t.teardown(() => mc.stop())
  const anonymous = await plain(mc.port)
  t.equal(await anonymous.command('get k\r\n'), 'CLIENT_ERROR unauthenticated\r\n')
  anonymous.close()
  const alice = await plain(mc.port)
  t.teardown(() => alice.close())
  t.equal(await alice.command('set a 0 0 12\r\nalice s3cret\r\n'), 'STORED\r\n', 'credentials as the first set')
  t.equal(await setGet(alice, 'k', 'v'), 'v')
  const wrong = await plain(mc.port)
  t.equal(await wrong.command('set a 0 0 11\r\nalice wrong\r\n'), 'CLIENT_ERROR authentication failure\r\n')
  wrong.close()
})

/**
 * memcached built with --enable-sasl-pwdb (the official image) reads MEMCACHED_SASL_PWDB's
 * `user@realm:password` lines; Debian's build has no pwdb and asks Cyrus SASL's sasldb, keyed by the
 * same user and realm. So the file the pod's init step wrote goes into a sasldb line by line, as
 * pwdb reads it: a line without a realm under a realm no host has (pwdb compares the whole
 * "user@host" and never matches it). The SASL configuration gets the sasldb's path.
 */
function pwdbAsSasldb(files: PodFiles, env: Record<string, string>): void {
  const pwdb = env.MEMCACHED_SASL_PWDB
  const conf = env.SASL_CONF_PATH
  if (!pwdb || !conf) throw new Error('the render sets no MEMCACHED_SASL_PWDB or SASL_CONF_PATH')
  requireTool('saslpasswd2')
  const db = `${files.root}/sasldb2`
  for (const line of readFileSync(pwdb, 'utf8').split('\n').filter((l) => l.includes(':'))) {
    const [name, password] = [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1)]
    const at = name.lastIndexOf('@')
    const [user, realm] = at < 0 ? [name, 'no-realm.invalid'] : [name.slice(0, at), name.slice(at + 1)]
    execFileSync('saslpasswd2', ['-f', db, '-u', realm, '-p', '-c', user], { input: password })
  }
  if (existsSync(db)) chmodSync(db, 0o644)
  appendFileSync(`${conf}/memcached.conf`, `sasldb_path: ${db}\n`)
}

t.test('sasl (-S): the documented user:password lines authenticate in every pod, whatever its name', async (t) => {
  const objects = render({ auth: { enabled: true, mode: 'sasl', secretName: 'users' } })
  for (const podName of ['cache-0', 'cache-7d9f8b6c4-x2x9q']) {
    const mc = running(await startPod(objects, { secrets: { users }, podName, beforeStart: pwdbAsSasldb }))
    t.teardown(() => mc.stop())
    t.equal(readFileSync(`${mc.files.root}/etc/memcached/sasl-db/passwords`, 'utf8'), `alice@${mc.hostname}:s3cret\nbob@${mc.hostname}:hunter2\n`, `${podName}: the init step qualified the lines with the host name memcached has`)
    const anonymous = await plain(mc.port)
    t.match((await binary(anonymous, BIN.SASL_LIST_MECHS)).value, /PLAIN/, `${podName}: PLAIN offered`)
    t.equal((await binary(anonymous, BIN.GET, 'k')).status, BIN_STATUS.AUTH_ERROR, `${podName}: nothing before authentication`)
    anonymous.close()
    const conn = await plain(mc.port)
    t.teardown(() => conn.close())
    t.same(await saslPlain(conn, 'alice', 's3cret'), { status: BIN_STATUS.SUCCESS, value: 'Authenticated' }, `${podName}: alice as the Secret says`)
    t.equal((await binarySet(conn, 'k', 'v')).status, BIN_STATUS.SUCCESS)
    t.same(await binary(conn, BIN.GET, 'k'), { status: BIN_STATUS.SUCCESS, value: 'v' })
    const other = await plain(mc.port)
    t.equal((await saslPlain(other, 'bob', 'wrong')).status, BIN_STATUS.AUTH_ERROR, `${podName}: a wrong password`)
    other.close()
  }
})
