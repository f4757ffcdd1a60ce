/*
 * A tiny libdcmi.so for vigil's tests with the prototypes and structure
 * layouts of dcmi_interface_api.h: two cards (3 and 5) with one chip each,
 * card 5 in a major alarm. It has no dcmi_get_device_network_health, like
 * an older driver.
 */
#include <string.h>
struct chip { unsigned char t[32], n[32], v[32]; unsigned int cores; };
struct ecc { int en; unsigned int sb, db, tsb, tdb, sbp, dbp; };
struct hbm { unsigned long long size; unsigned int freq; unsigned long long usage; int temp; unsigned int bw; };
struct proc { int pid; unsigned long mem; };
struct pcie { unsigned int v, sv, d, sd; int domain; unsigned int bus, dev, fn; unsigned char r[32]; };
struct elabel { char product[256], model[256], maker[256], date[256], serial[256]; };
static int inited;
int dcmi_init(void) { inited = 1; return 0; }
int dcmi_get_card_num_list(int *n, int *list, int len) { if (!inited) return -8012; *n = 2; list[0] = 3; list[1] = 5; return 0; }
int dcmi_get_device_num_in_card(int card, int *n) { *n = 1; return 0; }
int dcmi_get_device_logic_id(int *id, int card, int dev) { *id = card == 3 ? 0 : 1; return 0; }
int dcmi_get_device_pcie_info_v2(int card, int dev, struct pcie *p) { memset(p, 0, sizeof *p); p->bus = card == 3 ? 0xc1 : 0x01; return 0; }
int dcmi_get_device_chip_info(int card, int dev, struct chip *c) {
	memset(c, 0, sizeof *c); strcpy((char *)c->t, "Ascend"); strcpy((char *)c->n, "910B3"); strcpy((char *)c->v, "V1"); c->cores = 20; return 0; }
int dcmi_get_device_elabel_info(int card, int dev, struct elabel *e) {
	memset(e, 0, sizeof *e); strcpy(e->product, "Atlas 800T A2"); strcpy(e->model, "IT21PMNB"); strcpy(e->maker, "Huawei");
	strcpy(e->date, "2024/03/11"); strcpy(e->serial, card == 3 ? "102385467ABC" : "102385467XYZ"); return 0; }
int dcmi_get_device_health(int card, int dev, unsigned int *h) { *h = card == 5 ? 2 : 0; return 0; }
int dcmi_get_device_errorcode_v2(int card, int dev, int *n, unsigned int *l, unsigned int len) {
	if (card == 5) { *n = 2; l[0] = 0x80E01801; l[1] = 0x80CB8009; } else *n = 0; return 0; }
int dcmi_get_device_ecc_info(int card, int dev, int kind, struct ecc *e) {
	if (kind != 2) return -8255; memset(e, 0, sizeof *e); e->en = 1; e->db = card == 5 ? 3 : 0; e->tdb = 4; e->dbp = 2; return 0; }
int dcmi_get_device_utilization_rate(int card, int dev, int kind, unsigned int *u) { *u = kind == 2 ? 87 : 0; return 0; }
int dcmi_get_device_power_info(int card, int dev, int *p) { *p = 3125; return 0; }
int dcmi_get_device_hbm_info(int card, int dev, struct hbm *h) { h->size = 65536; h->usage = 3379; h->freq = 1600; h->temp = 40; h->bw = 5; return 0; }
int dcmi_get_device_resource_info(int card, int dev, struct proc *p, int *n) {
	if (card == 5) { p[0].pid = 4242; p[0].mem = 1ul << 30; *n = 1; } else *n = 0; return 0; }
