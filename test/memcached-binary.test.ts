/**
 * The memcached tests need the real binary: without it they fail, naming the command that installs
 * it, rather than skip.
 */
import t from 'tap'
import { INSTALL_HINT, MEMCACHED_PACKAGES, memcachedBinary, requireTool } from './support/memcached.ts'

t.test('a missing memcached is an error that names the install command', async (t) => {
  const saved = process.env.MEMCACHED
  process.env.MEMCACHED = '/nonexistent/memcached'
  t.teardown(() => {
    if (saved === undefined) delete process.env.MEMCACHED
    else process.env.MEMCACHED = saved
  })
  t.throws(() => memcachedBinary(), { message: /the memcached binary \(\/nonexistent\/memcached\) is needed by this test and is missing: install it with `apt-get update && apt-get install -y memcached sasl2-bin libsasl2-modules openssl`/ })
  t.throws(() => requireTool('/nonexistent/saslpasswd2'), { message: new RegExp(`missing: install it with \`${INSTALL_HINT.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\``) })
})

t.test('this machine has them (else every memcached test fails, as this one does)', async (t) => {
  t.match(memcachedBinary(), /memcached$/)
  for (const [tool, args] of [['saslpasswd2', ['-v']], ['openssl', ['version']]] as const) t.doesNotThrow(() => requireTool(tool, [...args]), tool)
  t.equal(MEMCACHED_PACKAGES.length, 4)
})
