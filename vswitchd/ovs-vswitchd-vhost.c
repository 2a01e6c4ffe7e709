/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ovs-vswitchd with vhost-user ports served by ovs-vhost.
 *
 * This is Open vSwitch's own vswitchd/ovs-vswitchd.c, compiled unchanged
 * from the OVS source tree given to configure, with its main() renamed so
 * that the one below runs first.  The vhost-user classes register
 * themselves from a constructor in lib/netdev-vhost.c; nothing else
 * differs from the OVS build it is linked against.
 *
 * A drop-in binary: it takes the same command line as the distro's
 * ovs-vswitchd and answers to the same `ovs-appctl -t ovs-vswitchd`,
 * because OVS derives the pidfile and control socket names from the program
 * name, and that is "ovs-vswitchd" whatever this file is installed as
 * (/usr/lib/openvswitch-switch-vhost/ovs-vswitchd-vhost, or the
 * /usr/sbin/ovs-vswitchd alternative).
 */

#include <config.h>

#define main ovs_vswitchd_main
#include "vswitchd/ovs-vswitchd.c"
#undef main

int main(int argc, char *argv[]);

int
main(int argc, char *argv[])
{
    const char *slash = strrchr(argv[0], '/');
    const char *base = slash ? slash + 1 : argv[0];

    if (strcmp(base, "ovs-vswitchd")) {
        /* argv[0] names the program for set_program_name(): keep the
         * directory, take the stock name. */
        size_t dirlen = base - argv[0];
        char *name = xmalloc(dirlen + sizeof "ovs-vswitchd");

        memcpy(name, argv[0], dirlen);
        strcpy(name + dirlen, "ovs-vswitchd");
        argv[0] = name;
    }
    return ovs_vswitchd_main(argc, argv);
}
