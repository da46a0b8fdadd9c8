-- MySQL dump 10.13  Distrib 8.0.36, for Linux (x86_64)
--
-- Host: localhost    Database: yourls
-- ------------------------------------------------------
-- Server version	8.0.36

/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;
/*!40101 SET NAMES utf8mb4 */;

--
-- Table structure for table `yourls_log`
--

DROP TABLE IF EXISTS `yourls_log`;
CREATE TABLE `yourls_log` (
  `click_id` int NOT NULL AUTO_INCREMENT,
  `click_time` datetime NOT NULL,
  `shorturl` varchar(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  PRIMARY KEY (`click_id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

LOCK TABLES `yourls_log` WRITE;
INSERT INTO `yourls_log` VALUES (1,'2019-05-06 07:09:00','yo1');
UNLOCK TABLES;

--
-- Dumping data for table `yourls_url` (the owner's links; don't edit)
--

DROP TABLE IF EXISTS `yourls_url`;
CREATE TABLE `yourls_url` (
  `keyword` varchar(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '',
  `url` text CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  `title` text COLLATE utf8mb4_unicode_ci,
  `timestamp` timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP,
  `ip` varchar(41) COLLATE utf8mb4_unicode_ci NOT NULL,
  `clicks` int unsigned NOT NULL,
  PRIMARY KEY (`keyword`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

LOCK TABLES `yourls_url` WRITE;
/*!40000 ALTER TABLE `yourls_url` DISABLE KEYS */;
INSERT INTO `yourls_url` VALUES ('sq1','https://example.org/one?a=1&b=(2)','It\'s one; with (parens), \"quotes\"','2019-05-06 07:08:09','127.0.0.1',5),('sq2','http://example.org/two',NULL,'2019-05-07 00:00:00','::1',0),('bad key','https://example.org/x','Bad','2019-05-07 00:00:00','::1',0);
/*!40000 ALTER TABLE `yourls_url` ENABLE KEYS */;
UNLOCK TABLES;
