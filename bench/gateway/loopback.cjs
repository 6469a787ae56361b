// Preloaded into Portkey's gateway (node --require) so that it listens on
// 127.0.0.1 only: its start-server.js binds every interface and has no flag
// for the address.
'use strict';
const net = require('net');
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === 'number' && (args.length === 1 || typeof args[1] !== 'string')) {
    args.splice(1, 0, process.env.BENCH_LISTEN_HOST || '127.0.0.1');
  }
  return listen.apply(this, args);
};
