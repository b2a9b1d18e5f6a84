// Preloaded into the conformance CLI (`node --import`) by run.sh.
//
// The suite's own mock servers (client scenarios, OAuth servers, the canary
// endpoint of json-schema-ref-no-deref, ...) call `listen(0)` without a host,
// which binds every interface. This pins every TCP listener that names no
// address to 127.0.0.1, so the conformance run listens on loopback only.
//
// It wraps net.Server.prototype._listen2, the synchronous bind step that
// listen() reaches when no host is given (Node keeps the name so that code can
// wrap it). Wrapping listen() itself would not do: with a host, listen() binds
// asynchronously, and the suite reads server.address().port right after
// listen(0) returns. The URLs the suite hands out still say "localhost",
// which resolves to 127.0.0.1 as well (a dial to ::1 is refused at once and
// clients move on to 127.0.0.1).
import net from 'node:net';

const listen2 = net.Server.prototype._listen2;
if (typeof listen2 !== 'function') {
  throw new Error('loopback.mjs: net.Server.prototype._listen2 is missing in this Node version');
}
net.Server.prototype._listen2 = function loopbackListen2(address, port, addressType, backlog, fd, flags) {
  if (!address && typeof fd !== 'number') {
    address = '127.0.0.1';
    addressType = 4;
  }
  return listen2.call(this, address, port, addressType, backlog, fd, flags);
};
