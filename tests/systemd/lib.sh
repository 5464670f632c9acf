# SPDX-License-Identifier: GPL-2.0
# Helpers of the scripts that prepare a guest booted with systemd as PID 1 (qemu/run.sh
# --systemd): they run in a chroot of the guest's root (a QEMU snapshot: nothing written
# outlives the guest) before systemd starts. Source, do not run.
set -euo pipefail
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
TOP=/mnt/rswap
arg() { tr ' ' '\n' < /proc/cmdline | sed -n "s/^$1=//p" | tail -1; }

# The secret that the client's secret file and the server's allow-list share.
SECRET=3c6e0b8a5f1d47e29a0c4b7d6e8f10213243546576879809aabbccddeeff0011
CLIENT_ID=0x5301
PORT=7471

# prepare_common: what both guests get: rswapctl, rswap-server and rswap's units and
# /etc/rswap as a package installs them, rswap-metrics.timer enabled, the test's network and report units, no
# login prompts.
prepare_common() {
	local role=$1
	arg rswap.host > /etc/hostname
	install -m 755 "$TOP/tools/rswapctl/target/release/rswapctl" /usr/sbin/rswapctl
	install -m 755 "$TOP/tools/rswap-server/target/release/rswap-server" /usr/sbin/rswap-server
	install -m 644 "$TOP"/packaging/systemd/*.service "$TOP"/packaging/systemd/*.timer \
		/usr/lib/systemd/system/
	install -D -m 755 "$TOP/packaging/libexec/rswap-metrics" /usr/libexec/rswap/rswap-metrics
	# node_exporter's textfile directory, as its package makes it, and the metrics timer
	# enabled as a user would.
	mkdir -p /var/lib/prometheus/node-exporter
	systemctl enable rswap-metrics.timer
	mkdir -p /etc/rswap
	cp -r "$TOP"/packaging/etc/rswap/. /etc/rswap/
	install -m 755 "$TOP/tests/systemd/net.sh" /usr/local/sbin/rswap-test-net
	install -m 755 "$TOP/tests/systemd/report.sh" /usr/local/sbin/rswap-test-report
	cat > /etc/systemd/system/rswap-test-net.service <<-'UNIT'
	# SPDX-License-Identifier: GPL-2.0
	# rswap test guests: eth0's address from the kernel command line and soft-RoCE rxe0
	# on it, early (this image has no network manager). Stopped after everything that
	# is ordered after the network, and says then whether rswap swap is still active.
	[Unit]
	Description=rswap test network: eth0 and soft-RoCE rxe0
	DefaultDependencies=no
	After=systemd-modules-load.service
	Wants=network.target
	Before=network.target network-online.target shutdown.target
	Conflicts=shutdown.target

	[Service]
	Type=oneshot
	RemainAfterExit=yes
	ExecStart=/usr/local/sbin/rswap-test-net up
	ExecStop=/usr/local/sbin/rswap-test-net down

	[Install]
	WantedBy=network-online.target
	UNIT
	cat > /etc/systemd/system/rswap-test-report.service <<-UNIT
	# SPDX-License-Identifier: GPL-2.0
	# rswap test guests: once the boot is over, write what the host checks to /mnt/out.
	[Unit]
	Description=rswap test report ($role)
	After=multi-user.target

	[Service]
	Type=simple
	ExecStart=/usr/local/sbin/rswap-test-report $role
	StandardOutput=journal+console

	[Install]
	WantedBy=multi-user.target
	UNIT
	systemctl enable rswap-test-net.service rswap-test-report.service
	# Not a first boot (which would ask for settings on the console).
	[ -s /etc/machine-id ] && ! grep -q uninitialized /etc/machine-id \
		|| systemd-machine-id-setup >/dev/null
	systemctl mask serial-getty@ttyS0.service getty@tty1.service systemd-firstboot.service apt-daily.timer \
		apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer >/dev/null 2>&1 || true
}
