/* SPDX-License-Identifier: Apache-2.0 */
/* Open vSwitch's vswitchd/system-stats.c, compiled unchanged from the OVS
 * source tree given to configure. */

#include "vswitchd/system-stats.c"
